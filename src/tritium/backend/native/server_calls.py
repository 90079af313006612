"""What a native backend asks of the server: BLS, model queries, model control, metrics.

TRITONSERVER_ServerInferAsync becomes `server.infer_async` (Tritium's own routing, so any
model, decoupled ones and ensembles included), its responses are written through the
request's TRITONSERVER_ResponseAllocator, and the request is released after its final
response. Queries and control go to the `ServerApi` the models were given; custom metrics
become families of the server's MetricRegistry, exported on /metrics next to Triton's own.
"""

from __future__ import annotations

import ctypes
import itertools
import json
import threading
from ctypes import (
    POINTER,
    c_char_p,
    c_double,
    c_int,
    c_int64,
    c_uint32,
    c_uint64,
    c_void_p,
)
from typing import Any

import numpy as np

from ...config import model_config_from_json
from ...custom_metrics import MetricKind
from ...errors import TritonError
from ...raw_input import raw_input_tensor
from ...request import (
    RESPONSE_COMPLETE_FINAL,
    InferenceRequest,
    InferenceResponse,
    RequestedOutput,
    log_prefix,
)
from ...tensor import Tensor, input_from_wire, serialize_bytes
from ..server_api import ServerApi
from .library import _CODE_NUMBERS, Library
from .requests import DATATYPE_NUMBERS, DATATYPES, _parameter_value, add_parameter

# The server the loaded backends were given (their models' TRITONBACKEND_ModelServer): one per
# process, there from the first TRITONBACKEND_Initialize on.
_server: ServerApi | None = None
_METRIC_KINDS = [MetricKind.COUNTER, MetricKind.GAUGE, MetricKind.HISTOGRAM]
_metric_objects: dict[int, Any] = {}
_metric_ids = itertools.count(1)
_metric_lock = threading.Lock()
# The requests sent with TRITONSERVER_ServerInferAsync and not yet answered, by the address of
# their TRITONSERVER_InferenceRequest (TRITONSERVER_InferenceRequestCancel names them so). One
# dict operation at a time, each atomic under the GIL: no lock on the BLS path.
_in_flight: dict[int, InferenceRequest] = {}


def attach(server: ServerApi | None) -> None:
    """The server backends' calls go to (None: it stopped, and calls fail UNAVAILABLE)."""
    global _server
    _server = server


def _require() -> ServerApi:
    if _server is None:
        raise TritonError.unavailable("no Tritium server runs in this process (none was made, "
                                      "or it was stopped)")
    return _server


def _version(version: int) -> int:
    """Triton's int64 model version: 0 or -1 let the version policy pick."""
    return version if version > 0 else -1


def server_call(op: int, name: str, version: int, argument: str | None) -> int | str:
    server = _require()
    if op == 1:
        return int(server.model_ready(name, _version(version)))
    if op in (2, 3):
        config = server.model_config_json(name, _version(version))
        if op == 2:
            decoupled = config.get("model_transaction_policy", {}).get("decoupled", False)
            return 2 if decoupled else 1
        return 2 if config.get("max_batch_size", 0) > 0 else 1
    if op == 4:
        server.load_model(name, _load_parameters(argument or "{}"))
        return 0
    if op in (5, 6):
        server.unload_model(name, unload_dependents=op == 6)
        return 0
    if op == 7:
        return _json(server.metadata())
    if op == 8:
        return _json(server.model_metadata(name, _version(version)))
    if op == 9:
        return _json(server.model_config_json(name, _version(version)))
    if op == 11:
        return _json(server.repository_index(ready_only=bool(version & 1)))
    if op == 12:
        return int(server.is_ready())
    if op == 13:  # TRITONSERVER_InferenceRequestCancel: `version` is the request's address
        request = _in_flight.get(version)
        if request is not None:
            request.cancelled = True
        return 0
    if op == 14:  # TRITONSERVER_InferenceRequestNew: Triton's GetModel, and its errors
        if not server.model_ready(name, _version(version)):
            server.model_config_json(name, _version(version))  # raises what Triton says
        return 0
    raise TritonError.unsupported(f"server call {op} is not supported by Tritium")


def _json(document: Any) -> str:
    """A message's JSON, compact as Triton writes it (programs compare the text)."""
    return json.dumps(document, separators=(",", ":"))


def _load_parameters(text: str) -> dict[str, Any]:
    parameters: dict[str, Any] = {}
    for key, (kind, value) in json.loads(text).items():
        parameters[key] = bytes.fromhex(value) if kind == "x" else value
    return parameters


def metric_call(op: int, handle: int, kind: int, name: str, description: str, value: float,
                buckets: list[float]) -> float | int:
    if op == 1:
        registry = _require().metrics
        family = registry.family(name, description, _METRIC_KINDS[kind])
        return _remember(family)
    with _metric_lock:
        target = _metric_objects.get(handle)
    if target is None:
        raise TritonError.invalid_arg("unknown metric handle")
    if op == 2:
        _forget(handle)
        return 0
    if op == 3:
        labels = json.loads(name)
        metric = target.metric(labels, buckets if kind == 2 else None)
        return _remember(metric)
    if op == 4:
        target.family.remove(target)
        _forget(handle)
        return 0
    if op == 5:
        return float(target.value)
    if op == 6:
        target.increment(value)
    elif op == 7:
        target.set(value)
    elif op == 8:
        target.observe(value)
    return 0


def _remember(obj: Any) -> int:
    with _metric_lock:
        handle = next(_metric_ids)
        _metric_objects[handle] = obj
        return handle


def _forget(handle: int) -> None:
    with _metric_lock:
        _metric_objects.pop(handle, None)


def infer_async(lib: Library, sreq: int) -> None:
    """TRITONSERVER_ServerInferAsync: route the request; answer through its allocator."""
    request = _read_request(lib, sreq)
    model, version = request.model_name, request.model_version

    def output_query(name: str | None, byte_size: int | None, memory_type: int,
                     memory_type_id: int) -> tuple[int, int]:
        size = ctypes.c_size_t(byte_size or 0)
        kind, device = c_int(memory_type), c_int64(memory_type_id)
        error = lib.take_error(lib.tritium_sreq_query(
            sreq, name.encode() if name is not None else None,
            ctypes.byref(size) if byte_size is not None else None, ctypes.byref(kind),
            ctypes.byref(device)))
        if error is not None:
            raise error
        return kind.value, device.value

    request.output_query = output_query

    def deliver(response: InferenceResponse | None, flags: int) -> None:
        handle = None
        if response is not None:
            handle = _write_response(lib, sreq, response, model, version)
        final = flags & RESPONSE_COMPLETE_FINAL
        if final:
            _in_flight.pop(sreq, None)
        lib.tritium_sreq_complete(sreq, handle, flags)  # with the final one, the release

    _in_flight[sreq] = request
    try:
        _require().infer_async(request, deliver)
    except BaseException:
        _in_flight.pop(sreq, None)
        raise


def _read_request(lib: Library, sreq: int) -> InferenceRequest:
    model, rid, text_id = c_char_p(), c_char_p(), c_char_p()
    version, flags, number_id = c_int64(), c_uint32(), c_uint64()
    priority, timeout = c_uint64(), c_uint64()
    n_in, n_out, n_param = c_uint32(), c_uint32(), c_uint32()
    lib.tritium_sreq_info(sreq, model, version, rid, flags, number_id, text_id, priority,
                          timeout, n_in, n_out, n_param)
    model_name = (model.value or b"").decode()
    raw_input = lib.tritium_sreq_raw_input(sreq)
    raw_name = raw_input.decode() if raw_input is not None else None
    inputs: dict[str, Tensor] = {}
    name, kind = c_char_p(), c_int()
    shape, dims, size = POINTER(c_int64)(), c_uint32(), c_uint64()
    for index in range(n_in.value):
        lib.tritium_sreq_input(sreq, index, name, kind, shape, dims, size)
        tensor_name = (name.value or b"").decode()
        dims_tuple = tuple(shape[i] for i in range(dims.value))
        raw = ctypes.create_string_buffer(max(size.value, 1))
        error = lib.take_error(lib.tritium_sreq_input_copy(sreq, index, raw))
        if error is not None:
            raise error
        data = raw.raw[: size.value]
        if raw_name is not None and tensor_name == raw_name:
            tensor = _raw_input(model_name, version.value, data, n_in.value)
            inputs[tensor.name] = tensor
            continue
        wire = DATATYPES[kind.value] if 0 < kind.value < len(DATATYPES) else "INVALID"
        if wire == "INVALID":
            raise TritonError.invalid_arg(f"input '{tensor_name}' has an invalid datatype")
        # Its size (and BYTES elements) checked with Triton's messages, as an HTTP body's.
        array = input_from_wire(data, wire, dims_tuple, tensor_name, model_name,
                                log_prefix((rid.value or b"").decode()))
        inputs[tensor_name] = Tensor(tensor_name, wire, dims_tuple, array)
    outputs = [RequestedOutput((lib.tritium_sreq_output(sreq, i) or b"").decode())
               for i in range(n_out.value)]
    parameters: dict[str, Any] = {}
    text, number, real = c_char_p(), c_int64(), c_double()
    for index in range(n_param.value):
        lib.tritium_sreq_parameter(sreq, index, name, kind, text, number, real)
        parameters[(name.value or b"").decode()] = _parameter_value(
            kind.value, text.value, number.value, real.value)
    correlation: int | str = (
        text_id.value.decode() if text_id.value is not None else number_id.value)
    return InferenceRequest(
        model_name, version.value, id=(rid.value or b"").decode(), inputs=inputs,
        requested_outputs=outputs, parameters=parameters, correlation_id=correlation,
        flags=flags.value, priority=priority.value, timeout_us=timeout.value)


def _raw_input(model_name: str, version: int, data: bytes, given: int) -> Tensor:
    """TRITONSERVER_InferenceRequestAddRawInput's tensor: named, typed and shaped from the
    model's configuration, as Triton deduces a raw input."""
    config = model_config_from_json(
        _require().model_config_json(model_name, version if version > 0 else ""))
    return raw_input_tensor(config, data, model_name, given=given)


def _write_response(lib: Library, sreq: int, response: InferenceResponse, model: str,
                    version: int) -> int:
    error = response.error
    code = -1
    message = b""
    if error is not None:
        code, message = _CODE_NUMBERS.get(error.code, 1), error.message.encode()
    handle = lib.tritium_sresp_new(
        sreq, (response.model_name or model).encode(),
        int(response.model_version) if str(response.model_version).isdigit() else version,
        response.id.encode(), code, message)
    if error is not None:
        return handle
    preferred = response.preferred_memory or {}
    for tensor in response.outputs:
        data: Any
        if tensor.datatype == "BYTES":
            data = serialize_bytes(np.asarray(tensor.data))
            address = ctypes.cast(c_char_p(data), c_void_p).value
            size = len(data)
        else:
            data = np.ascontiguousarray(tensor.data)
            address, size = data.ctypes.data, data.nbytes
        shape = (c_int64 * len(tensor.shape))(*tensor.shape)
        memory_type, memory_type_id = preferred.get(tensor.name, (0, 0))
        err = lib.tritium_sresp_add_output(sreq, handle, tensor.name.encode(),
                                           DATATYPE_NUMBERS[tensor.datatype], shape,
                                           len(tensor.shape), address, size, memory_type,
                                           memory_type_id)
        if err:
            lib.take_error(err)  # the allocator refused: the output is left out
    for key, value in response.parameters.items():
        add_parameter(lib.tritium_sresp_add_parameter, handle, key, value)
    return handle
