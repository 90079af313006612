"""The gRPC frontend: Triton's `inference.GRPCInferenceService` and `grpc.health.v1.Health`.

It runs on `grpc.aio` inside the server's event loop (uvloop or the default loop; both work), and
uses Triton's own protobuf stubs from `tritonclient.grpc`, so the real `tritonclient` talks to it
unmodified. A ModelInfer request is decoded into an `InferenceRequest`, handed to
`InferenceServer.infer`, and the response is encoded back the way Triton does: every output as
`raw_output_contents`.

Speed: the big parts of ModelInfer messages never go through protobuf objects. Large requests are
scanned by hand so each `raw_input_contents` entry becomes a zero-copy view of the received
message (`np.frombuffer` on it); responses are serialised by hand, output tensors appended
straight from their numpy buffers (one copy, into the message).

Errors carry Triton's status codes and messages (src/grpc/infer_handler.cc and the core's input
validation), and the status details are the message, as Triton sends them.
"""

from __future__ import annotations

import logging
import re
import struct
from typing import TYPE_CHECKING, Any, Sequence

import grpc
import numpy as np
from tritonclient.grpc import service_pb2 as pb

from ..errors import Code, TritonError
from ..request import (
    SEQUENCE_END,
    SEQUENCE_START,
    InferenceRequest,
    InferenceResponse,
    RequestedOutput,
)
from ..tensor import DATATYPES, Tensor, numpy_dtype, serialize_bytes

if TYPE_CHECKING:
    from ..server import InferenceServer

log = logging.getLogger("tritium.frontend.grpc")

SERVICE = "inference.GRPCInferenceService"
HEALTH_SERVICE = "grpc.health.v1.Health"

# Triton sets both limits to INT32_MAX (grpc_server.cc); gRPC's defaults (4 MB receive) would
# refuse ordinary image batches.
_MAX_MESSAGE = 2**31 - 1
_SERVER_OPTIONS = [
    ("grpc.max_receive_message_length", _MAX_MESSAGE),
    ("grpc.max_send_message_length", _MAX_MESSAGE),
    # Triton does not share its port (reuse_port defaults to false): a port already in use must
    # fail to bind instead of silently splitting the traffic with another process.
    ("grpc.so_reuseport", 0),
    # gRPC core cancels calls once more than 1000 wait to be matched with a handler; under a
    # burst of concurrent clients (perf_analyzer --concurrency-range) that rejected requests
    # that Triton serves. Let them queue instead.
    ("grpc.server.max_pending_requests", 1 << 20),
    ("grpc.server.max_pending_requests_hard_limit", 1 << 20),
]

_STATUS: dict[Code, grpc.StatusCode] = {code: grpc.StatusCode[code.grpc_name] for code in Code}

# grpc.health.v1.HealthCheckResponse{status: SERVING | NOT_SERVING}, encoded by hand (the
# message is one enum field; grpcio-health-checking is not needed for it).
_HEALTH_SERVING = b"\x08\x01"
_HEALTH_NOT_SERVING = b"\x08\x02"

_DTYPES: dict[str, np.dtype] = {name: numpy_dtype(name) for name in DATATYPES}

# Requests at least this big are scanned by hand so raw tensors stay views of the message; below
# it protobuf's C parser is faster than the Python scan and the copies are negligible.
_SCAN_THRESHOLD = 48 * 1024

_VERSION_RE = re.compile(r"\s*[+-]?\d+\s*")


class GrpcFrontend:
    """Serves Triton's gRPC API for `server` on `address:port` (port 0 picks a free port)."""

    def __init__(self, server: InferenceServer, address: str, port: int) -> None:
        self.server = server
        self.address = address
        self.port = port
        self.description = f"GRPCInferenceService at {address}:{port}"
        self._grpc: grpc.aio.Server | None = None

    async def start(self) -> None:
        """Bind and start serving; raise OSError if the address cannot be bound."""
        grpc_server = grpc.aio.server(options=_SERVER_OPTIONS)
        service = _InferenceService(self.server)
        handlers = service.method_handlers()
        health = {"Check": grpc.unary_unary_rpc_method_handler(service.health_check)}
        grpc_server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(SERVICE, handlers),
                grpc.method_handlers_generic_handler(HEALTH_SERVICE, health),
            )
        )
        if hasattr(grpc_server, "add_registered_method_handlers"):  # grpcio >= 1.63
            # Registered methods skip gRPC's per-call method-name lookup.
            grpc_server.add_registered_method_handlers(SERVICE, handlers)
            grpc_server.add_registered_method_handlers(HEALTH_SERVICE, health)
        host = f"[{self.address}]" if ":" in self.address and not self.address.startswith("[") \
            else self.address
        target = f"{host}:{self.port}"
        try:
            bound = grpc_server.add_insecure_port(target)
        except RuntimeError:  # grpcio >= 1.5x raises RuntimeError("Failed to bind to address ...")
            bound = 0
        if not bound:
            await grpc_server.stop(None)
            raise OSError(
                f"failed to start GRPC service: unable to bind {target} (address in use or "
                "not available)"
            )
        self.port = bound
        self.description = f"GRPCInferenceService at {self.address}:{bound}"
        await grpc_server.start()
        self._grpc = grpc_server

    async def stop(self, grace: float) -> None:
        """Refuse new RPCs; RPCs in flight get up to `grace` seconds before being cancelled."""
        if self._grpc is not None:
            grpc_server, self._grpc = self._grpc, None
            await grpc_server.stop(grace)


class _InferenceService:
    """The RPC handlers. Each turns TritonError into the matching gRPC status."""

    def __init__(self, server: InferenceServer) -> None:
        self.server = server

    def method_handlers(self) -> dict[str, grpc.RpcMethodHandler]:
        handlers: dict[str, grpc.RpcMethodHandler] = {
            "ServerLive": _unary(self.server_live, pb.ServerLiveRequest, pb.ServerLiveResponse),
            "ServerReady": _unary(
                self.server_ready, pb.ServerReadyRequest, pb.ServerReadyResponse
            ),
            "ServerMetadata": _unary(
                self.server_metadata, pb.ServerMetadataRequest, pb.ServerMetadataResponse
            ),
            "ModelReady": _unary(self.model_ready, pb.ModelReadyRequest, pb.ModelReadyResponse),
            "ModelMetadata": _unary(
                self.model_metadata, pb.ModelMetadataRequest, pb.ModelMetadataResponse
            ),
            "ModelConfig": _unary(
                self.model_config, pb.ModelConfigRequest, pb.ModelConfigResponse
            ),
            # Requests and responses are (de)serialised here, not by protobuf objects.
            "ModelInfer": grpc.unary_unary_rpc_method_handler(
                self.model_infer, request_deserializer=_parse_or_none, response_serializer=None
            ),
        }
        for method in pb.DESCRIPTOR.services_by_name["GRPCInferenceService"].methods:
            if method.name not in handlers:
                handlers[method.name] = _unimplemented(
                    method.name, method.client_streaming or method.server_streaming
                )
        return handlers

    # -- health and metadata -------------------------------------------------------------------

    async def server_live(self, request: pb.ServerLiveRequest, context: Any) -> Any:
        return pb.ServerLiveResponse(live=self.server.is_live())

    async def server_ready(self, request: pb.ServerReadyRequest, context: Any) -> Any:
        return pb.ServerReadyResponse(ready=self.server.is_ready())

    async def health_check(self, request: bytes, context: Any) -> bytes:
        # Triton answers for any service name: SERVING when the server is ready.
        return _HEALTH_SERVING if self.server.is_ready() else _HEALTH_NOT_SERVING

    async def server_metadata(self, request: pb.ServerMetadataRequest, context: Any) -> Any:
        meta = self.server.metadata()
        return pb.ServerMetadataResponse(
            name=meta["name"], version=meta["version"], extensions=meta["extensions"]
        )

    async def model_ready(self, request: pb.ModelReadyRequest, context: Any) -> Any:
        try:
            version = _version_string(request.version)
            return pb.ModelReadyResponse(ready=self.server.model_ready(request.name, version))
        except TritonError as err:
            await _abort(context, err)

    async def model_metadata(self, request: pb.ModelMetadataRequest, context: Any) -> Any:
        try:
            meta = self.server.model_metadata(request.name, _version_string(request.version))
        except TritonError as err:
            await _abort(context, err)
        response = pb.ModelMetadataResponse(
            name=meta["name"], versions=meta["versions"], platform=meta["platform"]
        )
        for kind, target in (("inputs", response.inputs), ("outputs", response.outputs)):
            for tensor in meta[kind]:
                target.add(name=tensor["name"], datatype=tensor["datatype"], shape=tensor["shape"])
        return response

    async def model_config(self, request: pb.ModelConfigRequest, context: Any) -> Any:
        try:
            config = self.server.model_config(request.name, _version_string(request.version))
        except TritonError as err:
            await _abort(context, err)
        return pb.ModelConfigResponse(config=config)

    # -- inference -----------------------------------------------------------------------------

    async def model_infer(self, parsed: "ParsedInferRequest | None", context: Any) -> bytes:
        if parsed is None:
            await context.abort(grpc.StatusCode.INTERNAL, _UNPARSABLE)
        assert parsed is not None
        message, raws = parsed
        try:
            # Like Triton: the model (and whether ModelInfer may serve it) is settled before the
            # tensors are looked at, so an unknown model wins over anything wrong in the data.
            config = self.server.model_config(
                message.model_name, _version_string(message.model_version)
            )
            if config.model_transaction_policy.decoupled:
                raise TritonError.unsupported(
                    "ModelInfer RPC doesn't support models with decoupled transaction policy"
                )
            request = decode_infer_request(message, raws)
            response = await self.server.infer(request)
            return encode_infer_response(response, request)
        except TritonError as err:
            await _abort(context, err)
        except Exception as exc:  # a bug, not the client's fault: keep serving, say INTERNAL
            log.exception("ModelInfer for model '%s' failed", message.model_name)
            await context.abort(grpc.StatusCode.INTERNAL, str(exc) or type(exc).__name__)
        raise AssertionError("unreachable")  # abort() always raises


# What Triton answers when a message does not parse.
_UNPARSABLE = "Unable to parse request"


class _Unparsable:
    """Stands for a request message that failed to parse (grpc would answer UNKNOWN)."""


_UNPARSED = _Unparsable()


def _unary(handler: Any, request_type: Any, response_type: Any) -> grpc.RpcMethodHandler:
    parse = request_type.FromString

    def deserialize(data: bytes) -> Any:
        try:
            return parse(data)
        except Exception:
            return _UNPARSED

    async def call(request: Any, context: Any) -> Any:
        if request is _UNPARSED:
            await context.abort(grpc.StatusCode.INTERNAL, _UNPARSABLE)
        return await handler(request, context)

    return grpc.unary_unary_rpc_method_handler(
        call, request_deserializer=deserialize, response_serializer=response_type.SerializeToString
    )


def _parse_or_none(data: bytes) -> "ParsedInferRequest | None":
    try:
        return parse_infer_request(data)
    except Exception:
        return None


def _unimplemented(name: str, streaming: bool) -> grpc.RpcMethodHandler:
    text = f"The {name} RPC is not implemented by this server yet"

    if streaming:
        async def stream(request_iterator: Any, context: Any) -> Any:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, text)
            yield  # pragma: no cover - makes this an async generator

        return grpc.stream_stream_rpc_method_handler(stream)

    async def unary(request: bytes, context: Any) -> bytes:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, text)
        return b""  # pragma: no cover

    return grpc.unary_unary_rpc_method_handler(unary)


async def _abort(context: Any, err: TritonError) -> None:
    await context.abort(_STATUS[err.code], err.message)


def _version_string(version: str) -> str:
    """Triton's GetModelVersionFromString: "" is the policy's choice, else an integer >= 0."""
    if version == "":
        return ""
    if not _VERSION_RE.fullmatch(version):
        raise TritonError.invalid_arg(
            f"failed to get model version from specified version string '{version}' "
            "(details: stol), version should be an integral value > 0"
        )
    value = int(version)
    if value < 0:
        raise TritonError.invalid_arg(
            f"invalid model version specified '{version}' , version should be an integral "
            "value > 0"
        )
    return str(value)


# -- ModelInferRequest: parsing and decoding ----------------------------------------------------

ParsedInferRequest = tuple[pb.ModelInferRequest, Sequence["bytes | memoryview"]]


def parse_infer_request(data: bytes) -> ParsedInferRequest:
    """Wire bytes -> (message without its raw contents, raw_input_contents).

    Big messages are scanned field by field: raw_input_contents (field 7) entries become
    memoryviews of `data` (no copy) and only the rest goes through protobuf.
    """
    if len(data) < _SCAN_THRESHOLD:
        message = pb.ModelInferRequest.FromString(data)
        return message, list(message.raw_input_contents)
    view = memoryview(data)
    rest: list[memoryview] = []
    raws: list[memoryview] = []
    pos, end = 0, len(data)
    while pos < end:
        start = pos
        tag, pos = _read_varint(data, pos)
        wire_type = tag & 7
        if wire_type == 2:
            length, pos = _read_varint(data, pos)
            stop = pos + length
            if stop > end:
                raise ValueError("truncated ModelInferRequest")
            if tag >> 3 == 7:
                raws.append(view[pos:stop])
            else:
                rest.append(view[start:stop])
            pos = stop
        elif wire_type == 0:
            _, pos = _read_varint(data, pos)
            rest.append(view[start:pos])
        elif wire_type == 1 or wire_type == 5:
            pos += 8 if wire_type == 1 else 4
            if pos > end:
                raise ValueError("truncated ModelInferRequest")
            rest.append(view[start:pos])
        else:
            raise ValueError(f"unsupported protobuf wire type {wire_type} in ModelInferRequest")
    return pb.ModelInferRequest.FromString(b"".join(rest)), raws


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    end = len(data)
    while pos < end:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            break
    raise ValueError("malformed varint in ModelInferRequest")


def decode_infer_request(
    message: pb.ModelInferRequest, raws: Sequence[bytes | memoryview]
) -> InferenceRequest:
    """ModelInferRequest -> InferenceRequest, with Triton's checks and messages."""
    model = message.model_name
    version = _version_string(message.model_version)
    request = InferenceRequest(model, int(version) if version else -1, id=message.id)
    rid = message.id
    if message.parameters:
        _apply_parameters(request, message.parameters)

    inputs: dict[str, Tensor] = request.inputs
    raw_count = len(raws)
    raw_index = 0
    for io in message.inputs:
        name = io.name
        if name in inputs:
            raise TritonError.invalid_arg(
                f"{_prefix(rid)}input '{name}' already exists in request"
            )
        parameters = _parameters(io.parameters) if io.parameters else {}
        if "shared_memory_region" in parameters:
            # No region can be registered yet (the shared-memory RPCs come later).
            raise TritonError.not_found(
                f"Unable to find shared memory region: '{parameters['shared_memory_region']}'"
            )
        datatype = io.datatype
        dtype = _DTYPES.get(datatype)
        if dtype is None:
            raise TritonError.invalid_arg(
                f"{_prefix(rid)}invalid datatype '{datatype}' for input '{name}' of model "
                f"'{model}'; expected one of {', '.join(sorted(DATATYPES))}"
            )
        shape = tuple(io.shape)
        for dim in shape:
            if dim < 0:
                raise TritonError.invalid_arg(
                    f"{_prefix(rid)}invalid shape {_dims(shape)} for input '{name}' of model "
                    f"'{model}': dimensions must be >= 0"
                )
        if io.HasField("contents"):
            if raw_count:
                raise TritonError.invalid_arg(
                    f"contents field must not be specified when using raw_input_contents for "
                    f"'{name}' for model '{model}'"
                )
            data = _contents_array(io, datatype, dtype, shape, model, rid)
        elif raw_index < raw_count:
            data = _raw_array(raws[raw_index], name, datatype, dtype, shape, model, rid)
            raw_index += 1
        else:
            raise TritonError.invalid_arg(
                f"unable to find data for input tensor '{name}' for model '{model}' in request."
            )
        inputs[name] = Tensor(name, datatype, shape, data, parameters)
    if raw_index != raw_count:
        raise TritonError.invalid_arg(
            f"{_prefix(rid)}{raw_count} raw_input_contents given for {len(message.inputs)} "
            f"inputs of model '{model}': raw_input_contents must hold one entry per input, in "
            "the order of 'inputs'"
        )

    for out in message.outputs:
        out_parameters = _parameters(out.parameters) if out.parameters else {}
        if "shared_memory_region" in out_parameters:
            raise TritonError.not_found(
                f"Unable to find shared memory region: "
                f"'{out_parameters['shared_memory_region']}'"
            )
        request.requested_outputs.append(RequestedOutput(out.name, out_parameters))
    return request


def _raw_array(
    buffer: bytes | memoryview,
    name: str,
    datatype: str,
    dtype: np.dtype,
    shape: tuple[int, ...],
    model: str,
    rid: str,
) -> np.ndarray:
    count = 1
    for dim in shape:
        count *= dim
    if datatype == "BYTES":
        return _bytes_elements(buffer, count, name, model, rid).reshape(shape)
    expected = count * dtype.itemsize
    if len(buffer) != expected:
        raise TritonError.invalid_arg(
            f"{_prefix(rid)}input byte size mismatch for input '{name}' for model '{model}'. "
            f"Expected {expected}, got {len(buffer)}"
        )
    return np.frombuffer(buffer, dtype=dtype).reshape(shape)


def _bytes_elements(
    buffer: bytes | memoryview, count: int, name: str, model: str, rid: str
) -> np.ndarray:
    """Triton's length-prefixed BYTES elements, checked as the core checks them."""
    where = f"for inference input '{name}' for model '{model}'"
    size = len(buffer)
    items: list[bytes] = []
    offset = 0
    unpack = struct.unpack_from
    while size - offset >= 4:
        if len(items) >= count:
            raise TritonError.invalid_arg(
                f"{_prefix(rid)}unexpected number of string elements {len(items) + 1} {where}, "
                f"expecting {count}"
            )
        (length,) = unpack("<I", buffer, offset)
        offset += 4
        if length > size - offset:
            raise TritonError.invalid_arg(
                f"{_prefix(rid)}incomplete string data {where}, expecting string of length "
                f"{length} but only {size - offset} bytes available"
            )
        items.append(bytes(buffer[offset : offset + length]))
        offset += length
    if offset != size:
        raise TritonError.invalid_arg(
            f"{_prefix(rid)}element byte size indicator exceeds the end of the buffer {where}"
        )
    if len(items) != count:
        raise TritonError.invalid_arg(
            f"{_prefix(rid)}expected {count} string elements {where}, got {len(items)}"
        )
    array = np.empty(count, dtype=np.object_)
    array[:] = items
    return array


# InferTensorContents field -> (the datatype it carries, datatypes it may fill). int_contents
# also carries INT8/INT16 and uint_contents UINT8/UINT16 (each element's low bytes), as Triton.
_CONTENTS: list[tuple[str, str, tuple[str, ...]]] = [
    ("bool_contents", "BOOL", ("BOOL",)),
    ("int_contents", "INT32", ("INT8", "INT16", "INT32")),
    ("int64_contents", "INT64", ("INT64",)),
    ("uint_contents", "UINT32", ("UINT8", "UINT16", "UINT32")),
    ("uint64_contents", "UINT64", ("UINT64",)),
    ("fp32_contents", "FP32", ("FP32",)),
    ("fp64_contents", "FP64", ("FP64",)),
    ("bytes_contents", "BYTES", ("BYTES",)),
]


def _contents_array(
    io: Any, datatype: str, dtype: np.dtype, shape: tuple[int, ...], model: str, rid: str
) -> np.ndarray:
    """Typed `contents` -> array, with Triton's checks (one kind only, of the right type)."""
    name = io.name
    contents = io.contents
    data: np.ndarray | None = None
    for field, carried, fills in _CONTENTS:
        values = getattr(contents, field)
        if not values:
            continue
        if data is not None:
            raise TritonError.invalid_arg(
                f"unexpected explicit tensor data for input tensor '{name}' for model "
                f"'{model}', binary data was already supplied."
            )
        if datatype not in fills:
            raise TritonError.invalid_arg(
                f"unexpected explicit tensor data for input tensor '{name}' for model "
                f"'{model}' of type '{carried}', expected datatype '{datatype}'"
            )
        if datatype == "BYTES":
            data = np.empty(len(values), dtype=np.object_)
            data[:] = list(values)
        elif carried == datatype:
            data = np.array(values, dtype=dtype)
        else:  # INT8/INT16/UINT8/UINT16 from 32-bit elements: keep the low bytes
            data = np.array(values, dtype=_DTYPES[carried]).astype(dtype)
    count = 1
    for dim in shape:
        count *= dim
    if datatype == "BYTES":
        got = 0 if data is None else len(data)
        if got != count:
            raise TritonError.invalid_arg(
                f"{_prefix(rid)}expected {count} string elements for inference input '{name}' for "
                f"model '{model}', got {got}"
            )
    else:
        got = 0 if data is None else len(data)
        if got != count:
            raise TritonError.invalid_arg(
                f"{_prefix(rid)}input byte size mismatch for input '{name}' for model '{model}'. "
                f"Expected {count * dtype.itemsize}, got {got * dtype.itemsize}"
            )
    if data is None:
        data = np.empty(0, dtype=dtype)
    return data.reshape(shape)


def _apply_parameters(request: InferenceRequest, params: Any) -> None:
    """Request parameters: the ones Triton interprets set request fields, the rest are kept."""
    for key, param in params.items():
        kind = param.WhichOneof("parameter_choice")
        if key == "sequence_id":
            if kind == "int64_param":
                request.correlation_id = param.int64_param
            elif kind == "string_param":
                request.correlation_id = param.string_param
            else:
                raise TritonError.invalid_arg(
                    "invalid value type for 'sequence_id' parameter, expected int64_param or "
                    "string_param."
                )
        elif key in ("sequence_start", "sequence_end"):
            if kind != "bool_param":
                raise TritonError.invalid_arg(
                    f"invalid value type for '{key}' parameter, expected bool_param."
                )
            if param.bool_param:
                request.flags |= SEQUENCE_START if key == "sequence_start" else SEQUENCE_END
        elif key == "priority":
            if kind == "int64_param":
                if param.int64_param < 0:
                    raise TritonError.invalid_arg(
                        "invalid value for 'priority', expected value >= 0."
                    )
                request.priority = param.int64_param
            elif kind == "uint64_param":
                request.priority = param.uint64_param
            else:
                raise TritonError.invalid_arg(
                    "invalid value type for 'priority' parameter, expected int64_param or "
                    "uint64_param."
                )
        elif key == "timeout":
            if kind != "int64_param":
                raise TritonError.invalid_arg(
                    "invalid value type for 'timeout' parameter, expected int64_param."
                )
            request.timeout_us = param.int64_param
        elif key.startswith("triton_"):
            if key != "triton_enable_empty_final_response":
                raise TritonError.invalid_arg(
                    "parameter keys starting with 'triton_' are reserved for Triton usage. Only "
                    "the following keys starting with 'triton_' are allowed: "
                    "triton_enable_empty_final_response"
                )
            if kind != "bool_param":
                raise TritonError.invalid_arg(
                    f"invalid value type for '{key}' parameter, expected bool_param."
                )
            # A streaming option (ModelStreamInfer); never a parameter the model sees.
        else:
            if kind == "double_param" or kind is None:
                raise TritonError.invalid_arg(
                    f"invalid value type for '{key}' parameter, expected int64_param, "
                    "bool_param, or string_param."
                )
            request.parameters[key] = getattr(param, kind)


def _parameters(params: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, param in params.items():
        kind = param.WhichOneof("parameter_choice")
        if kind is not None:
            out[key] = getattr(param, kind)
    return out


def _prefix(request_id: str) -> str:
    """How Triton's core starts its messages about a request."""
    return f"[request id: {request_id or '<id_unknown>'}] "


def _dims(shape: Sequence[int]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


# -- ModelInferResponse: encoding ---------------------------------------------------------------

_RAW_OUTPUT_TAG = b"\x32"  # field 6 (raw_output_contents), wire type 2


def encode_infer_response(response: InferenceResponse, request: InferenceRequest) -> bytes:
    """InferenceResponse -> ModelInferResponse wire bytes, every output as raw contents.

    The small part (names, shapes, parameters) is a protobuf message; the tensors are appended
    as raw_output_contents fields straight from their buffers (a protobuf message may list its
    fields in any order, and repeated fields concatenate).
    """
    head = pb.ModelInferResponse(
        model_name=response.model_name, model_version=response.model_version, id=response.id
    )
    if response.parameters:
        _set_parameters(head.parameters, response.parameters)
    outputs = response.outputs
    if request.requested_outputs:
        wanted = set(request.requested_output_names)
        outputs = [t for t in outputs if t.name in wanted]
    parts: list[Any] = [b""]
    for tensor in outputs:
        entry = head.outputs.add(name=tensor.name, datatype=tensor.datatype, shape=tensor.shape)
        if tensor.parameters:
            _set_parameters(entry.parameters, tensor.parameters)
        payload: Any
        if tensor.datatype == "BYTES":
            payload = serialize_bytes(np.asarray(tensor.data, dtype=np.object_))
            size = len(payload)
        else:
            array = tensor.data
            dtype = _DTYPES.get(tensor.datatype)
            if dtype is None:
                raise TritonError.internal(
                    f"output '{tensor.name}' has invalid datatype '{tensor.datatype}'"
                )
            if not isinstance(array, np.ndarray) or array.dtype != dtype \
                    or not array.flags.c_contiguous:
                array = np.ascontiguousarray(array, dtype=dtype)
            size = array.nbytes
            payload = array.reshape(-1).view(np.uint8) if size else b""
        parts.append(_RAW_OUTPUT_TAG + _varint(size))
        parts.append(payload)
    parts[0] = head.SerializeToString()
    return b"".join(parts)


def _varint(value: int) -> bytes:
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _set_parameters(target: Any, values: dict[str, Any]) -> None:
    for key, value in values.items():
        param = target[key]
        if isinstance(value, bool):
            param.bool_param = value
        elif isinstance(value, int):
            if value >= 2**63:
                param.uint64_param = value
            else:
                param.int64_param = value
        elif isinstance(value, float):
            param.double_param = value
        elif isinstance(value, (bytes, bytearray)):
            param.string_param = bytes(value).decode("utf-8", "replace")
        else:
            param.string_param = str(value)


__all__ = [
    "GrpcFrontend",
    "decode_infer_request",
    "encode_infer_response",
    "parse_infer_request",
]
