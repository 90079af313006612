"""The gRPC frontend: Triton's `inference.GRPCInferenceService` and `grpc.health.v1.Health`.

The RPC bodies are grpcio method handlers run by Tritium's own HTTP/2 transport
(`server`, `http2`) in the server's event loop: grpcio's server would cost more CPU per call
than the rest of a request. Messages are Triton's own protobuf stubs from `tritonclient.grpc`, so
the real `tritonclient` talks to it unmodified. A ModelInfer request's model is resolved once
(`InferenceServer.resolve`), the request decoded into an `InferenceRequest` (`infer_request`), run
on that model through the loop bridge (`frontend/loop_bridge.py`), and the response encoded
back the way Triton does. ModelStreamInfer (bidirectional streaming, the one way to decoupled
models) lives in `stream`.

Errors carry Triton's status codes and messages (src/grpc/infer_handler.cc), and the status
details are the message, as Triton sends them.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from functools import partial
from time import perf_counter_ns
from typing import Any

import grpc
from tritonclient.grpc import service_pb2 as pb

from ...errors import Code, TritonError
from ...request import InferenceRequest, InferenceResponse, parse_version
from ...server import InferenceServer, ResolvedModel
from .. import loop_bridge
from ..bulk_work import Decoding, bulky_bytes, bulky_input, later
from ..extensions import logging_api, trace_api
from ..extensions.header_forward import HeaderPattern, forward_headers
from ..extensions.infer_failed import log_infer_failed
from ..extensions.restricted_api import Restriction, restrict_grpc
from ..extensions.shared_memory import end_region_use
from ..extensions.statistics_api import statistics_proto
from .call import UNPARSABLE
from .immediate import ImmediateCall, ImmediateUnary, MethodHandler
from .infer_request import ParsedInferRequest, decode_infer_request, parse_infer_request
from .infer_response import encode_infer_response
from .options import GrpcOptions
from .repository import RepositoryService
from .response_delay import ResponseDelay
from .server import GrpcServer
from .shared_memory import handlers as shared_memory_handlers
from .stream import StreamInferHandler

log = logging.getLogger("tritium.frontend.grpc")

SERVICE = "inference.GRPCInferenceService"
HEALTH_SERVICE = "grpc.health.v1.Health"

# The RPCs Triton's TRITONSERVER_SERVER_DELAY_GRPC_RESPONSE_SEC leaves alone (response_delay).
_INFERENCE_RPCS = ("ModelInfer", "ModelStreamInfer")

_STATUS: dict[Code, grpc.StatusCode] = {code: grpc.StatusCode[code.grpc_name] for code in Code}

# grpc.health.v1.HealthCheckResponse{status: SERVING | NOT_SERVING}, encoded by hand (the
# message is one enum field; grpcio-health-checking is not needed for it).
_HEALTH_SERVING = b"\x08\x01"
_HEALTH_NOT_SERVING = b"\x08\x02"


class GrpcFrontend:
    """Serves Triton's gRPC API for `server` on `address:port` (port 0 picks a free port)."""

    def __init__(self, server: InferenceServer, address: str, port: int,
                 restrictions: dict[str, Restriction] | None = None,
                 options: GrpcOptions | None = None, *,
                 header_forward: HeaderPattern | None = None,
                 compression_level: str = "none", reuse_port: bool = False) -> None:
        self.server = server
        self.restrictions = restrictions or {}
        self.options = options or GrpcOptions()
        # --grpc-header-forward-pattern, --grpc-infer-response-compression-level,
        # --reuse-grpc-port.
        self.header_forward = header_forward
        self.compression_level = compression_level
        self.reuse_port = reuse_port
        self.address = address
        self.port = port
        self.description = f"GRPCInferenceService at {address}:{port}"
        self._grpc: GrpcServer | None = None

    async def start(self) -> None:
        """Bind and start serving; raise OSError if the address cannot be bound."""
        service = _InferenceService(self.server, self.header_forward)
        handlers = restrict_grpc(service.method_handlers(), self.restrictions)
        health = restrict_grpc(
            {"Check": grpc.unary_unary_rpc_method_handler(service.health_check)},
            self.restrictions,
        )
        routes = {f"/{SERVICE}/{name}": handler for name, handler in handlers.items()}
        routes.update({f"/{HEALTH_SERVICE}/{name}": handler for name, handler in health.items()})
        delay = ResponseDelay()
        if delay.seconds:
            for path, handler in routes.items():
                if path.rpartition("/")[2] not in _INFERENCE_RPCS:
                    routes[path] = delay.delayed(handler)
        options = self.options
        grpc_server = GrpcServer(routes, options.limits, options.max_message_size,
                                 compression_level=self.compression_level)
        host = self.address.strip("[]")
        ssl_context = options.ssl.context() if options.ssl is not None else None
        try:
            bound = await grpc_server.start(host, self.port, ssl_context,
                                            reuse_port=self.reuse_port)
        except OSError:
            target = f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"
            raise OSError(
                f"failed to start GRPC service: unable to bind {target} (address in use or "
                "not available)"
            ) from None
        self.port = bound
        self.description = f"GRPCInferenceService at {self.address}:{bound}"
        self._grpc = grpc_server

    async def stop(self, grace: float) -> None:
        """Refuse new RPCs; RPCs in flight get up to `grace` seconds before being cancelled."""
        if self._grpc is not None:
            grpc_server, self._grpc = self._grpc, None
            await grpc_server.stop(grace)


class _InferenceService:
    """The RPC handlers. Each turns TritonError into the matching gRPC status."""

    def __init__(self, server: InferenceServer,
                 header_forward: HeaderPattern | None = None) -> None:
        self.server = server
        self.header_forward = header_forward
        self.stream = StreamInferHandler(server, header_forward)
        self.repository = RepositoryService(server)

    def method_handlers(self) -> dict[str, MethodHandler]:
        handlers: dict[str, MethodHandler] = {
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
            "RepositoryIndex": _unary(
                _triton_errors(self.repository.index),
                pb.RepositoryIndexRequest,
                pb.RepositoryIndexResponse,
            ),
            "RepositoryModelLoad": _unary(
                _triton_errors(self.repository.load),
                pb.RepositoryModelLoadRequest,
                pb.RepositoryModelLoadResponse,
            ),
            "RepositoryModelUnload": _unary(
                _triton_errors(self.repository.unload),
                pb.RepositoryModelUnloadRequest,
                pb.RepositoryModelUnloadResponse,
            ),
            # Requests and responses are (de)serialised here, not by protobuf objects.
            "ModelInfer": ImmediateUnary(self.model_infer, _parse_or_none),
            "ModelStreamInfer": grpc.stream_stream_rpc_method_handler(
                self.stream.handle, request_deserializer=_parse_or_none, response_serializer=None
            ),
            "ModelStatistics": _unary(
                self.model_statistics, pb.ModelStatisticsRequest, pb.ModelStatisticsResponse
            ),
            "LogSettings": _unary(self.log_settings, pb.LogSettingsRequest, pb.LogSettingsResponse),
            "TraceSetting": _unary(
                self.trace_setting, pb.TraceSettingRequest, pb.TraceSettingResponse
            ),
        }
        for rpc, (call, request_type, response_type) in shared_memory_handlers(
            self.server.shared_memory
        ).items():
            handlers[rpc] = _unary(_aborting(call), request_type, response_type)
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
            # Like Triton, a malformed version is an error, not a model that is not ready.
            parse_version(request.version)
            ready = self.server.model_ready(request.name, request.version)
            return pb.ModelReadyResponse(ready=ready)
        except TritonError as err:
            await _abort(context, err)

    async def model_metadata(self, request: pb.ModelMetadataRequest, context: Any) -> Any:
        try:
            meta = self.server.model_metadata(request.name, request.version)
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
            config = self.server.model_config(request.name, request.version)
        except TritonError as err:
            await _abort(context, err)
        return pb.ModelConfigResponse(config=config)

    # -- statistics, logging and trace extensions ----------------------------------------------

    async def model_statistics(self, request: pb.ModelStatisticsRequest, context: Any) -> Any:
        try:
            return statistics_proto(self.server.model_statistics(request.name, request.version))
        except TritonError as err:
            await _abort(context, err)

    async def log_settings(self, request: pb.LogSettingsRequest, context: Any) -> Any:
        try:
            return logging_api.grpc_update(self.server.log_settings, request)
        except TritonError as err:
            await _abort(context, err)

    async def trace_setting(self, request: pb.TraceSettingRequest, context: Any) -> Any:
        try:
            return trace_api.grpc_update(self.server, request)
        except TritonError as err:
            await _abort(context, err)

    # -- inference -----------------------------------------------------------------------------

    def model_infer(self, parsed: ParsedInferRequest | None, call: ImmediateCall) -> None:
        """ModelInfer as an immediate body: started here, answered from the response's
        callback on the loop. A request with a BYTES input of many elements is decoded on the
        bulk thread first (`frontend/bulk_work.py`)."""
        if parsed is None:
            return call.abort(grpc.StatusCode.INTERNAL, UNPARSABLE)
        message, raws, key = parsed
        received = perf_counter_ns()
        try:
            # Like Triton: the model (and whether ModelInfer may serve it) is settled before the
            # tensors are looked at, so an unknown model wins over anything wrong in the data.
            # It is looked up once: decode, inference and encode see the same version.
            model = self.server.resolve(message.model_name, message.model_version)
        except TritonError as err:
            log_infer_failed(message.id, err)
            return _fail(call, err)
        except Exception as exc:
            return _internal(call, message.model_name, exc)
        decode = partial(decode_infer_request, message, raws, self.server.shared_memory, key)
        if model.decoupled or not any(bulky_input(io.datatype, io.shape)
                                      for io in message.inputs):
            return self._infer(call, message, model, received, decode)
        waiting = Decoding()
        call.on_cancel = waiting.cancel
        later(decode, call.context.loop, lambda decoded: self._infer(
            call, message, model, received, decoded.result, waiting))

    def _infer(self, call: ImmediateCall, message: Any, model: ResolvedModel, received: int,
               decoded: Callable[[], tuple[InferenceRequest, Any]],
               waiting: Decoding | None = None) -> None:
        """Run the request `decoded()` gives on `model` (held until submitted), unless the
        client went away while it was decoded."""
        try:
            with model:
                if waiting is not None and waiting.cancelled:
                    return
                if model.decoupled:
                    raise TritonError.unsupported(
                        "ModelInfer RPC doesn't support models with decoupled transaction policy"
                    )
                request, regions = decoded()
                context = call.context
                if self.header_forward is not None:
                    forward_headers(request, self.header_forward, context.invocation_metadata())
                config, labels = model.config, model.labels
                if self.server.trace_settings.active:
                    # The message was read whole when the call began: its wait for the read
                    # starts and ends then.
                    self.server.trace_settings.start(request, "GRPC_WAITREAD", received,
                                                     received)

                def reply(response: InferenceResponse, encoded: Callable[[], bytes]) -> None:
                    if response.error is not None:
                        return _fail(call, response.error)
                    try:
                        data = encoded()
                    except TritonError as err:
                        return _fail(call, err)
                    except Exception as exc:
                        return _internal(call, message.model_name, exc)
                    call.reply(data)

                def send(response: InferenceResponse, encoded: Callable[[], bytes]) -> None:
                    try:
                        trace = request.trace
                        if trace is None:
                            return reply(response, encoded)
                        with trace.sending("GRPC_SEND"):
                            reply(response, encoded)
                    finally:
                        end_region_use(request)

                def answer(response: InferenceResponse) -> None:
                    # A response with a BYTES output of many elements is encoded on the bulk
                    # thread, then sent from the loop.
                    encode = partial(encode_infer_response, response, request, regions=regions,
                                     config=config, labels=labels)
                    if response.error is None and bulky_bytes(response.outputs):
                        return later(encode, context.loop,
                                     lambda encoded: send(response, encoded.result))
                    send(response, encode)

                call.on_cancel = partial(_cancelled, request)
                loop_bridge.final_on_loop(model.submit, request, answer, context.loop)
        except TritonError as err:
            log_infer_failed(message.id, err)
            _fail(call, err)
        except Exception as exc:
            _internal(call, message.model_name, exc)


_contexts = itertools.count(1)


def _cancelled(request: InferenceRequest) -> None:
    """The client cancelled the call (or went away) before its answer: so is the request.
    Logged in Triton's verbose words (its QA greps the log for them)."""
    context = next(_contexts)
    log.debug("Cancellation notification received for ModelInferHandler, rpc_ok=1, context "
              "%d, %d step ISSUED", context, context)
    request.cancelled = True


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
            await context.abort(grpc.StatusCode.INTERNAL, UNPARSABLE)
        return await handler(request, context)

    return grpc.unary_unary_rpc_method_handler(
        call, request_deserializer=deserialize, response_serializer=response_type.SerializeToString
    )


def _aborting(call: Any) -> Any:
    """An async handler around a plain one whose TritonError becomes the call's status."""

    async def handler(request: Any, context: Any) -> Any:
        try:
            return call(request)
        except TritonError as err:
            await _abort(context, err)

    return handler


def _parse_or_none(data: bytes) -> ParsedInferRequest | None:
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


def _triton_errors(handler: Any) -> Any:
    """An RPC body `handler(request)` whose TritonError becomes the matching gRPC status."""

    async def call(request: Any, context: Any) -> Any:
        try:
            return await handler(request)
        except TritonError as err:
            await _abort(context, err)

    return call


async def _abort(context: Any, err: TritonError) -> None:
    await context.abort(_STATUS[err.code], err.message)


def _fail(call: ImmediateCall, err: TritonError) -> None:
    call.abort(_STATUS[err.code], err.message)


def _internal(call: ImmediateCall, model_name: str, exc: Exception) -> None:
    """A bug, not the client's fault: keep serving, say INTERNAL."""
    log.exception("ModelInfer for model '%s' failed", model_name, exc_info=exc)
    call.abort(grpc.StatusCode.INTERNAL, str(exc) or type(exc).__name__)


__all__ = ["GrpcFrontend"]
