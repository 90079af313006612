"""The host table: what libtritonserver.so calls in Python, by token.

Each callback runs with the GIL (ctypes takes it) on whatever thread the backend called from,
turns Python exceptions into TRITONSERVER_Error objects the library owns, and never lets one
escape into C. Request callbacks go to the `PendingRequest` of the token; model callbacks to
the model's handle; server-wide calls (BLS, model control, metrics) to `server_calls`; calls on
a server a program made through the C API (TRITONSERVER_ServerNew) to the handler that
`set_server_objects` installed (tritium.inprocess.c_api), if any.
"""

from __future__ import annotations

import faulthandler
import logging
import threading
from collections.abc import Callable
from typing import Any

from ...errors import TritonError
from ...request import MEMORY_CPU, REQUEST_RELEASE_RESCHEDULE, InferenceResponse
from ...statistics import MemoryUsage
from ..handles import ModelInstance
from . import build, server_calls
from .library import TOKENS, Library
from .requests import PendingRequest, read_response, read_state

# What answers the calls on a server object: (op, name, version, argument) -> int or text.
ServerObjects = Callable[[int, str, int, "str | None"], "int | str"]
_server_objects: ServerObjects | None = None
# Its ops (csrc/host.h ServerObjectOp).
SOP_NEW, SOP_STOP, SOP_DELETE, SOP_EXIT_TIMEOUT, SOP_REGISTER = 1, 2, 3, 4, 5
SOP_UNREGISTER, SOP_POLL, SOP_LIVE, SOP_STATISTICS, SOP_METRICS = 6, 7, 8, 9, 10


def set_server_objects(handler: ServerObjects) -> None:
    """Have `handler` answer TRITONSERVER_ServerNew and the calls on the server it makes."""
    global _server_objects
    _server_objects = handler


def _no_server_objects(op: int, name: str, version: int, argument: str | None) -> int | str:
    """A process whose server was not made through the C API (`tritium serve`): it is live
    while a backend can ask, and it is not a server object a backend may make or stop."""
    if op == SOP_LIVE:
        return 1
    if op in (SOP_STATISTICS, SOP_METRICS):
        call = "ServerModelStatistics" if op == SOP_STATISTICS else "ServerMetrics"
        raise TritonError.unsupported(
            f"TRITONSERVER_{call} is not supported for a backend by Tritium: the server's "
            "statistics and metrics are on its HTTP, gRPC and metrics endpoints (a program "
            "that makes its server with TRITONSERVER_ServerNew gets them through the C API)")
    raise TritonError.unsupported(
        "this process already runs a Tritium server, started as `tritium serve` or from "
        "Python; the C API's server object calls (TRITONSERVER_ServerNew, ServerStop, "
        "ServerModelStatistics, ServerMetrics...) are for a program that makes its own")


# TRITONSERVER_LogLevel -> Python logging level
_LOG_LEVELS = {0: logging.INFO, 1: logging.WARNING, 2: logging.ERROR, 3: logging.DEBUG}
backend_log = logging.getLogger("tritium.backend.native.log")


def _guarded(lib: Library, function: Callable[..., Any]) -> Callable[..., Any]:
    """Call `function`; an exception becomes a returned TRITONSERVER_Error*."""
    def call(*args: Any) -> Any:
        try:
            function(*args)
            return None
        except Exception as exc:  # noqa: BLE001 - nothing may unwind into C
            return lib.new_error(exc)
    return call


def _logged(function: Callable[..., None]) -> Callable[..., None]:
    """For a callback that returns nothing to C: an exception is logged, never raised."""
    def call(*args: Any) -> None:
        try:
            function(*args)
        except Exception:  # noqa: BLE001 - nothing may unwind into C
            logging.getLogger("tritium.backend.native").exception("%s failed",
                                                                   function.__name__)
    return call


def _pending(token: int) -> PendingRequest:
    pending = TOKENS.get(token)
    if not isinstance(pending, PendingRequest):
        raise TritonError.invalid_arg("the request is no longer known to the server")
    return pending


def deliver_response(lib: Library, token: int, handle: int | None, flags: int,
                     error: int | None, stamps: Any) -> None:
    """A response the backend sent (TRITONBACKEND_ResponseSend / ResponseFactorySendFlags)."""
    pending = _pending(token)
    if stamps:  # TRITONBACKEND_ModelInstanceReportStatistics, reported before this
        pending.request.reported_statistics = (stamps[0], stamps[1], stamps[2], stamps[3])
    result: InferenceResponse | None = None
    if error:
        result = InferenceResponse(error=lib.read_error(error))
    elif handle:
        try:
            result = read_response(lib, handle, pending.model_name)
        except TritonError as exc:  # a malformed output fails this response, as in Triton
            result = InferenceResponse(error=exc)
    pending.deliver(result, flags)


def callbacks(lib: Library) -> dict[str, Callable[..., Any]]:
    def response(token: int, handle: int | None, flags: int, error: int | None,
                 stamps: Any) -> None:
        deliver_response(lib, token, handle, flags, error, stamps)

    def release(token: int, flags: int) -> None:
        # For requests still waiting for their FINAL response, and for any asked to run again
        # (the scheduler refuses with INVALID_ARG unless it runs iterative sequences).
        pending = _pending(token)
        if flags & REQUEST_RELEASE_RESCHEDULE:
            pending.request.release(REQUEST_RELEASE_RESCHEDULE)
            pending.rescheduled = True
        pending.released = True

    def is_cancelled(token: int) -> int:
        pending = TOKENS.get(token)
        return int(isinstance(pending, PendingRequest) and pending.request.cancelled)

    def log(level: int, filename: bytes, line: int, message: bytes) -> None:
        # The backend's own file and line head the line (the log formatter reads them).
        backend_log.log(_LOG_LEVELS.get(level, logging.INFO), "%s",
                        message.decode(errors="replace"),
                        extra={"source_file": filename.decode(errors="replace"),
                               "source_line": line})

    def log_enabled(level: int) -> int:
        return int(backend_log.isEnabledFor(_LOG_LEVELS.get(level, logging.INFO)))

    def model_config(token: int, out: Any) -> None:
        out[0] = lib.new_message(TOKENS[token].config_json())

    def model_set_config(token: int, text: bytes) -> None:
        TOKENS[token].set_config_json(text.decode("utf-8"))

    def statistics(instance: int, token: int, success: int, stamps: Any) -> None:
        # A failure, or a success reported after the FINAL response (earlier successes
        # travel with it, see response).
        pending = TOKENS.get(token)
        handle = TOKENS.get(instance)
        if isinstance(pending, PendingRequest) and isinstance(handle, ModelInstance):
            handle.report_statistics(pending.request, bool(success), stamps[0], stamps[1],
                                     stamps[2], stamps[3])

    def batch_statistics(instance: int, batch_size: int, stamps: Any) -> None:
        handle = TOKENS.get(instance)
        if isinstance(handle, ModelInstance):
            handle.report_batch_statistics(batch_size, stamps[0], stamps[1], stamps[2],
                                           stamps[3])

    def response_statistics(instance: int, index: int, error: int | None, stamps: Any) -> None:
        handle = TOKENS.get(instance)
        if not isinstance(handle, ModelInstance):
            raise TritonError.invalid_arg("the model instance is no longer known to the server")
        handle.report_response_statistics(index, stamps[0], stamps[1], stamps[2],
                                          lib.read_error(error) if error else None)

    def state_update(token: int, state: int) -> None:
        pending = _pending(token)
        tensor = read_state(lib, state, pending.model_name)
        pending.states = [s for s in pending.states if s.name != tensor.name] + [tensor]

    def request_gone(token: int, final_sent: int) -> None:
        pending = TOKENS.pop(token, None)
        if isinstance(pending, PendingRequest):
            try:
                pending.gone(bool(final_sent))
            except Exception:
                logging.getLogger("tritium.backend.native").exception("request_gone failed")

    def metric_call(op: int, handle: int, kind: int, name: bytes, description: bytes,
                    value: float, buckets: Any, bucket_count: int, out_handle: Any,
                    out_value: Any) -> None:
        result = server_calls.metric_call(op, handle, kind, name.decode(), description.decode(),
                                          value, [buckets[i] for i in range(bucket_count)])
        if out_handle:
            out_handle[0] = int(result)
        if out_value and op == 5:
            out_value[0] = float(result)

    def answer(result: int | str, out_int: Any, out_message: Any) -> None:
        if isinstance(result, str):
            out_message[0] = lib.new_message(result)
        else:
            out_int[0] = int(result)

    def server_call(op: int, name: bytes, version: int, argument: bytes | None, out_int: Any,
                    out_message: Any) -> None:
        answer(server_calls.server_call(op, name.decode(), version,
                                        argument.decode() if argument is not None else None),
               out_int, out_message)

    def server_object(op: int, name: bytes, version: int, argument: bytes | None, out_int: Any,
                      out_message: Any) -> None:
        handler = _server_objects or _no_server_objects
        answer(handler(op, name.decode(), version,
                       argument.decode() if argument is not None else None),
               out_int, out_message)

    def infer_async(request: int) -> None:
        server_calls.infer_async(lib, request)

    def output_properties(token: int, name: bytes | None, byte_size: Any, memory_type: Any,
                          memory_type_id: Any) -> None:
        # TRITONBACKEND_RequestOutputBufferProperties: host memory unless the request says.
        query = _pending(token).request.output_query
        if query is None:
            memory_type[0], memory_type_id[0] = MEMORY_CPU, 0
            return
        memory_type[0], memory_type_id[0] = query(
            name.decode() if name is not None else None,
            byte_size[0] if byte_size else None, memory_type[0], memory_type_id[0])

    def memory_usage(token: int, count: int, types: Any, ids: Any, sizes: Any) -> None:
        # The token of a model (its NativeModel) or of a ModelInstance.
        report = getattr(TOKENS.get(token), "report_memory_usage", None)
        if report is None:
            raise TritonError.invalid_arg("the model or instance is no longer known to the server")
        report([MemoryUsage(types[i], ids[i], sizes[i]) for i in range(count)])

    table: dict[str, Callable[..., Any]] = {
        "response": _guarded(lib, response),
        "release": _guarded(lib, release),
        "is_cancelled": is_cancelled,
        "log": log,
        "log_enabled": log_enabled,
        "model_config": _guarded(lib, model_config),
        "model_set_config": _guarded(lib, model_set_config),
        "statistics": _logged(statistics),
        "batch_statistics": _logged(batch_statistics),
        "response_statistics": _guarded(lib, response_statistics),
        "state_update": _guarded(lib, state_update),
        "server_call": _guarded(lib, server_call),
        "infer_async": _guarded(lib, infer_async),
        "metric_call": _guarded(lib, metric_call),
        "request_gone": request_gone,
        "memory_usage": _guarded(lib, memory_usage),
        "server_object": _guarded(lib, server_object),
        "output_properties": _guarded(lib, output_properties),
    }
    return table


_library: Library | None = None
_lock = threading.Lock()


def library(path: str | None = None) -> Library:
    """The process's libtritonserver.so, built, opened and given the host table on first use
    (UNAVAILABLE when it cannot be built). `path`: the library a program already loaded (it
    made a server through the C API), opened instead of the one Tritium builds: the same file
    twice would be two libraries with two host tables. It lives here, not in `library`, so that
    the library's module never needs the host's (no import cycle)."""
    global _library
    with _lock:
        if _library is None:
            _library = Library(path or str(build.library_path()))
            _library.install_host(callbacks(_library))
            # A compiled backend runs in the server's process: if it crashes (segfault, abort),
            # the process dies as Triton's does, but first the log gets every thread's Python
            # stack, naming the entry point (model_instance_execute...) that was running.
            if not faulthandler.is_enabled():
                faulthandler.enable(all_threads=True)
        return _library
