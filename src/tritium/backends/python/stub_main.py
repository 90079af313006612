"""The stub: the process that runs one instance of a Triton Python-backend model.

Started by the python backend (`backend.py`) as

    <python> -c <bootstrap> <tritium source dir> <exec fd> <async fd> <in-ring fd> <out-ring fd>
             <in-ring capacity> <out-ring capacity> <instance name>

with both sockets and both ring regions inherited. The main thread serves the *exec* socket:
INIT (import model.py, `initialize(args)`), EXECUTE (one batch: `execute(requests)`, answered
with the returned responses), FINALIZE and AUTO_COMPLETE, one at a time, in order. A reader
thread serves the *async* socket: replies to the stub's own calls (BLS, metrics, readiness of
other models, cancellation), readiness queries (`is_ready()`), and the server going away (EOF:
the stub exits at once). Anything the model sends on its own (responses through a response
sender, BLS requests, log lines, metric updates) goes out on the async socket from whatever
thread the model uses.

This module imports only the standard library, numpy, `triton_python_backend_utils` and the
transport (`_ipc`): it may run under another interpreter (an execution environment).
"""

from __future__ import annotations

import asyncio
import collections
import importlib.util
import itertools
import json
import os
import signal
import socket
import sys
import threading
import traceback
from typing import Any

from . import _ipc as ipc

# TRITONSERVER_DataType code (pb_utils.Tensor.triton_dtype()) -> wire datatype.
_WIRE_OF_CODE = {
    1: "BOOL", 2: "UINT8", 3: "UINT16", 4: "UINT32", 5: "UINT64", 6: "INT8", 7: "INT16",
    8: "INT32", 9: "INT64", 10: "FP16", 11: "FP32", 12: "FP64", 13: "BYTES",
}
_CODE_NAMES = ["UNKNOWN", "INTERNAL", "NOT_FOUND", "INVALID_ARG", "UNAVAILABLE", "UNSUPPORTED",
               "ALREADY_EXISTS", "CANCELLED"]
_RELEASE_RESCHEDULE = 2
# Frames of these files stay out of tracebacks sent to clients: in Triton they are C++.
_HIDDEN_FILES = {__file__}


class StubError(Exception):
    """An error the stub itself finds (Triton's stub raises these from C++: the message goes
    out bare, without an exception type or a traceback)."""


def describe_exception(exc: BaseException) -> str:
    """An exception as Triton's stub words it (pybind11's error_already_set::what()): the
    type, the message, and the model's frames, innermost first."""
    if isinstance(exc, StubError):
        return str(exc)
    text = f"{type(exc).__name__}: {exc}"
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__)
              if frame.filename not in _HIDDEN_FILES]
    if frames:
        text += "\n\nAt:\n" + "".join(
            f"  {frame.filename}({frame.lineno}): {frame.name}\n" for frame in reversed(frames)
        )
    return text


class _Waiter:
    """One pending call to the server, answered by the reader thread."""

    __slots__ = ("event", "error", "value")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.error: str | None = None
        self.value: Any = None


class _BlsCall:
    """The responses of one BLS request, as they come back from the server."""

    def __init__(self, stub: "Stub", decoupled: bool) -> None:
        self.stub = stub
        self.decoupled = decoupled
        self.cond = threading.Condition()
        self.queue: collections.deque = collections.deque()
        self.final = False
        self.last: Any = None
        # For async_exec: (loop, future), resolved from the reader thread.
        self.waiting: tuple[asyncio.AbstractEventLoop, asyncio.Future] | None = None

    def put(self, response: Any, final: bool) -> None:
        with self.cond:
            self.queue.append((response, final))
            if final:
                self.final = True
            if response is not None:
                self.last = response
            self.cond.notify_all()
            waiting = self.waiting
        if waiting is not None and (self.decoupled or final):
            loop, future = waiting
            self.waiting = None
            value = _ResponseIterator(self) if self.decoupled else self.result()
            loop.call_soon_threadsafe(_resolve, future, value)

    def wait_final(self) -> Any:
        with self.cond:
            while not self.final:
                self.cond.wait()
        return self.result()

    def result(self) -> Any:
        if self.last is not None:
            return self.last
        pb = self.stub.pb
        return pb.InferenceResponse(
            error=pb.TritonError("BLS request received no response")
        )


def _resolve(future: asyncio.Future, value: Any) -> None:
    if not future.done():
        future.set_result(value)


class _ResponseIterator:
    """What `exec(decoupled=True)` returns: each response as it comes; the last one carries
    the final flag (an empty response when the model sent the flag alone)."""

    def __init__(self, call: _BlsCall) -> None:
        self._call = call
        self._done = False

    def __iter__(self) -> "_ResponseIterator":
        return self

    def __next__(self) -> Any:
        if self._done:
            raise StopIteration
        call = self._call
        with call.cond:
            while not call.queue:
                call.cond.wait()
            response, final = call.queue.popleft()
        if final:
            self._done = True
            if response is None:
                response = call.stub.pb.InferenceResponse()
        return response

    def cancel(self) -> None:
        """Triton's ResponseIterator.cancel(): the server is not told (not supported yet)."""


class Stub:
    def __init__(self, exec_conn: ipc.Connection, async_conn: ipc.Connection,
                 in_ring: ipc.Ring, out_ring: ipc.Ring, name: str) -> None:
        self.exec_conn = exec_conn
        self.async_conn = async_conn
        self.in_ring = in_ring
        self.writer = ipc.TensorWriter(out_ring, f"tritium-{name}")
        self.instance_name = name
        self.name = name
        self.pb: Any = None
        self.model: Any = None
        self.decoupled = False
        self.initialized = False
        self.finalizing = False
        self._ids = itertools.count(1)
        self._calls: dict[int, _Waiter] = {}
        self._bls: dict[int, _BlsCall] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_lock = threading.Lock()
        self._background: set = set()
        self._from_server: Any = None

    # -- main thread: the exec socket ----------------------------------------------------

    def serve(self) -> None:
        conn = self.exec_conn
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                os._exit(0)
            kind = message[0]
            if kind == ipc.EXECUTE:
                self.execute(message)
            elif kind == ipc.INIT:
                self.initialize(message[1])
            elif kind == ipc.FINALIZE:
                self.finalize()
                return
            elif kind == ipc.AUTO_COMPLETE:
                self.auto_complete(message[1])
            else:
                conn.send((ipc.DONE, f"unknown command {kind}", None))

    def _import_model(self, settings: dict) -> Any:
        import triton_python_backend_utils as pb

        self.pb = pb
        self._from_server = pb.InferenceRequest._from_server
        _HIDDEN_FILES.add(pb.__file__)
        path = settings["model_path"]
        for entry in settings.get("sys_path", []):
            if entry not in sys.path:
                sys.path.append(entry)
        spec = importlib.util.spec_from_file_location("model", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import model file {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules["model"] = module
        spec.loader.exec_module(module)
        if not hasattr(module, "TritonPythonModel"):
            raise AttributeError(f"module 'model' has no attribute 'TritonPythonModel'")
        return module.TritonPythonModel

    def initialize(self, settings: dict) -> None:
        self.decoupled = bool(settings.get("decoupled"))
        try:
            cls = self._import_model(settings)
            self.pb._set_runtime(self, settings.get("model_dir"))
            self.model = cls()
            if hasattr(self.model, "initialize"):
                self.model.initialize(settings["args"])
            self.initialized = True
        except BaseException as exc:  # reported to the server, which fails the load
            self.exec_conn.send((ipc.DONE, describe_exception(exc), None))
            return
        self.exec_conn.send((ipc.DONE, None, {"has_is_ready": hasattr(self.model, "is_ready")}))

    def auto_complete(self, settings: dict) -> None:
        try:
            cls = self._import_model(settings)
            self.pb._set_runtime(self, settings.get("model_dir"))
            config_json = settings["config"]
            result = None
            if hasattr(cls, "auto_complete_config"):
                config = self.pb.ModelConfig(config_json)
                returned = cls.auto_complete_config(config)
                if not isinstance(returned, self.pb.ModelConfig):
                    raise TypeError(
                        f"auto_complete_config function in model '{settings['model_name']}' "
                        "must return a valid pb.ModelConfig object."
                    )
                result = json.dumps(returned.as_dict())
        except BaseException as exc:
            self.exec_conn.send((ipc.DONE, describe_exception(exc), None))
            return
        self.exec_conn.send((ipc.DONE, None, result))

    def finalize(self) -> None:
        self.finalizing = True
        error = None
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self.initialized and hasattr(self.model, "finalize"):
            try:
                self.model.finalize()
            except BaseException as exc:
                error = describe_exception(exc)
        try:
            self.exec_conn.send((ipc.DONE, error, None))
        except OSError:
            pass

    def execute(self, message: tuple) -> None:
        """One batch: build the requests (inputs are views of the in-ring), run the model's
        execute, answer with what it returned. The hot path: keep it lean."""
        _, wire_requests, block_descriptor = message
        decoupled = self.decoupled
        block = (None if block_descriptor is None
                 else ipc.open_block(block_descriptor, self.in_ring, self.exec_conn.fds))
        Tensor = self.pb.Tensor
        from_server = self._from_server
        requests = []
        try:
            for handle, rid, cid, flags, timeout, params, names, descriptors in wire_requests:
                inputs = [Tensor(name, block.array(datatype, shape, offset, nbytes, decoupled))
                          for name, datatype, shape, offset, nbytes in descriptors]
                requests.append(from_server(handle, inputs, names, rid, cid, flags, timeout,
                                            params, decoupled))
            if decoupled and block is not None:
                block.release()  # the inputs were copied: threads may use them after execute
        except BaseException as exc:
            if block is not None:
                block.release()
            self._send_done(describe_exception(exc), None, None, ())
            return

        responses = out_block = None
        fds: list[int] = []
        error = None
        try:
            try:
                returned = self.model.execute(requests)
                if type(returned) is not list and asyncio.iscoroutine(returned):
                    if decoupled:
                        self._run_in_background(returned)
                        returned = None
                    else:
                        returned = asyncio.run_coroutine_threadsafe(
                            returned, self._event_loop()).result()
                if returned is not None:
                    responses, out_block, fds = self._returned_responses(requests, returned)
            finally:
                if not decoupled and block is not None:
                    block.release()
        except BaseException as exc:
            error = (f"Failed to process the request(s) for model '{self.name}', message: "
                     + describe_exception(exc))
            for request in requests:
                request._response_sender._close()
        self._send_done(error, responses, out_block, fds)

    def _send_done(self, error: str | None, responses: Any, block: Any, fds: Any) -> None:
        try:
            self.exec_conn.send((ipc.DONE, error, responses, self.async_conn.sent, block), fds)
        finally:
            for fd in fds:
                os.close(fd)

    def _returned_responses(self, requests: list, returned: Any) -> tuple:
        """Triton's ProcessReturnedResponses: check what execute returned, count each response
        as its request's final one, prune the outputs nobody asked for, and pack them all in
        one block. -> (wire responses, block, fds)."""
        pb = self.pb
        if self.decoupled:
            raise StubError(
                f"Python model '{self.name}' is using the decoupled mode and the execute "
                "function must return None."
            )
        if not isinstance(returned, list):
            raise StubError(
                f"Expected a list in the execute return, found type '{type(returned)}'."
            )
        if len(returned) != len(requests):
            raise StubError(
                "Number of InferenceResponse objects do not match the number of "
                f"InferenceRequest objects. InferenceRequest(s) size is:{len(requests)}, and "
                f"InferenceResponse(s) size is:{len(returned)}\n"
            )
        Response = pb.InferenceResponse
        for request, response in zip(requests, returned):
            if response is None:
                continue
            if request._release_flags == _RELEASE_RESCHEDULE:
                raise StubError(
                    "Expected a None object in the execute function return list for "
                    f"reschduled request, found type '{type(response)}'."
                )
            if not isinstance(response, Response):
                raise StubError(
                    "Expected an 'InferenceResponse' object in the execute function return "
                    f"list, found type '{type(response)}'."
                )
            try:
                request._response_sender._update_state(response, ipc.FINAL)
            except pb.TritonModelException as exc:
                raise StubError(str(exc)) from None
        tensors: list = []
        counts: list[int] = []
        wire_of = _WIRE_OF_CODE
        for request, response in zip(requests, returned):
            if response is None:
                counts.append(-1)
                continue
            count = 0
            if response._error is None:
                # Triton's PruneOutputTensors: only what the request asked for goes back.
                wanted = request._requested_output_names
                for tensor in response._output_tensors:
                    if tensor._name in wanted:
                        tensors.append((tensor._name, wire_of[tensor._dtype], tensor._array))
                        count += 1
            counts.append(count)
        descriptors, block, fds = self.writer.pack(tensors)
        wire: list = []
        at = 0
        for response, count in zip(returned, counts):
            if count < 0:
                wire.append(None)
                continue
            error = response._error
            parameters = response._parameters
            wire.append((
                descriptors[at : at + count],
                None if error is None else (_CODE_NAMES[int(error.code())], error.message()),
                None if parameters == "{}" else parameters,
            ))
            at += count
        return wire, block, fds

    def _wire_response(self, response: Any, descriptors: list) -> tuple:
        error = response._error
        wire_error = None if error is None else (_CODE_NAMES[int(error.code())], error.message())
        parameters = response._parameters
        return descriptors, wire_error, None if parameters == "{}" else parameters

    # -- the async event loop (async def execute) ------------------------------------------

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        with self._loop_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="stub-asyncio",
                                 daemon=True).start()
                self._loop = loop
            return self._loop

    def _run_in_background(self, coroutine: Any) -> None:
        future = asyncio.run_coroutine_threadsafe(coroutine, self._event_loop())
        self._background.add(future)
        future.add_done_callback(self._background_done)

    def _background_done(self, future: Any) -> None:
        self._background.discard(future)
        if future.cancelled():
            return
        exc = future.exception()
        if exc is not None:
            self.log(2, "".join(traceback.format_exception(exc)), __file__, 0)

    # -- the reader thread: the async socket ---------------------------------------------

    def read_async(self) -> None:
        conn = self.async_conn
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                if self.finalizing:
                    return  # the main thread is finishing up
                os._exit(0)  # the server has gone: nothing left to serve
            try:
                kind = message[0]
                if kind == ipc.BLS_RESPONSE:
                    self._bls_response(message)
                elif kind == ipc.REPLY:
                    _, call_id, error, value = message
                    waiter = self._calls.pop(call_id, None)
                    if waiter is not None:
                        waiter.error, waiter.value = error, value
                        waiter.event.set()
                elif kind == ipc.READY_QUERY:
                    threading.Thread(target=self._answer_ready, args=(message[1],),
                                     daemon=True).start()
            except Exception:
                traceback.print_exc()

    def _answer_ready(self, query_id: int) -> None:
        ready = False
        try:
            result = self.model.is_ready()
            if asyncio.iscoroutine(result):
                result = asyncio.run_coroutine_threadsafe(result, self._event_loop()).result()
            ready = result is True or (isinstance(result, (bool,)) and bool(result))
        except BaseException as exc:
            self.log(2, f"is_ready() raised: {describe_exception(exc)}", __file__, 0)
        try:
            self.async_conn.send((ipc.READY_REPLY, query_id, ready))
        except OSError:
            pass

    def _bls_response(self, message: tuple) -> None:
        _, bls_id, wire, flags, block_descriptor = message
        call = self._bls.get(bls_id)
        final = bool(flags & ipc.FINAL)
        if final:
            self._bls.pop(bls_id, None)
        response = None
        if wire is not None:
            block = ipc.open_block(block_descriptor, self.in_ring, self.async_conn.fds)
            try:
                response = self._pb_response(wire, block)
            finally:
                if block is not None:
                    block.release()
        if call is not None:
            call.put(response, final)

    def _pb_response(self, wire: tuple, block: Any) -> Any:
        pb = self.pb
        descriptors, error, parameters = wire
        tensors = [pb.Tensor(name, array) for name, _dt, array
                   in ipc.read_tensors(descriptors, block, True)]
        pb_error = None
        if error is not None:
            code, message = error
            pb_error = pb.TritonError(message, getattr(pb.TritonError, code, 1))
        response = pb.InferenceResponse(output_tensors=tensors, error=pb_error)
        if parameters:
            response._parameters = parameters
        return response

    # -- the runtime pb_utils calls ------------------------------------------------------

    def _call(self, name: str, *args: Any) -> Any:
        call_id = next(self._ids)
        waiter = _Waiter()
        self._calls[call_id] = waiter
        self.async_conn.send((ipc.CALL, call_id, name, args))
        waiter.event.wait()
        if waiter.error is not None:
            raise self.pb.TritonModelException(waiter.error)
        return waiter.value

    def send_response(self, request_handle: Any, response: Any, flags: int) -> None:
        fds: list[int] = []
        wire = block = None
        if response is not None:
            outputs = response._output_tensors if response._error is None else ()
            descriptors, block, fds = self.writer.pack(
                [(t._name, _WIRE_OF_CODE[t._dtype], t._array) for t in outputs]
            )
            wire = self._wire_response(response, descriptors)
        try:
            self.async_conn.send((ipc.RESPONSE, request_handle, wire, flags, block), fds)
        finally:
            for fd in fds:
                os.close(fd)

    def is_cancelled(self, request_handle: Any) -> bool:
        return bool(self._call("is_cancelled", request_handle))

    def _start_bls(self, request: Any, decoupled: bool) -> tuple[int, _BlsCall, tuple, list]:
        pb = self.pb
        if not self.initialized or self.finalizing:
            raise pb.TritonModelException("BLS is only supported during the 'execute' function.")
        tensors = [(t._name, _WIRE_OF_CODE[t._dtype], t._array) for t in request._inputs]
        descriptors, block, fds = self.writer.pack(tensors)
        wire = (
            request._model_name, int(request._model_version), request._request_id,
            request._correlation_id, request._flags, int(request._timeout),
            request._parameters, sorted(request._requested_output_names), descriptors,
        )
        bls_id = next(self._ids)
        call = _BlsCall(self, decoupled)
        self._bls[bls_id] = call
        return bls_id, call, (ipc.BLS, bls_id, wire, decoupled, block), fds

    def _send_bls(self, message: tuple, fds: list[int]) -> None:
        try:
            self.async_conn.send(message, fds)
        finally:
            for fd in fds:
                os.close(fd)

    def bls_exec(self, request: Any, decoupled: bool) -> Any:
        _id, call, message, fds = self._start_bls(request, decoupled)
        self._send_bls(message, fds)
        if decoupled:
            return _ResponseIterator(call)
        return call.wait_final()

    def bls_async_exec(self, request: Any, decoupled: bool) -> Any:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        _id, call, message, fds = self._start_bls(request, decoupled)
        call.waiting = (loop, future)
        self._send_bls(message, fds)
        return future

    def log(self, level: int, message: str, filename: str, line: int) -> None:
        try:
            self.async_conn.send((ipc.LOG, int(level), str(message), filename, line))
        except OSError:
            pass

    def metric_family_new(self, name: str, description: str, kind: int) -> Any:
        return self._call("metric_family_new", name, description, kind)

    def metric_new(self, family_handle: Any, labels: dict, buckets: Any) -> Any:
        return self._call("metric_new", family_handle, dict(labels), buckets)

    def metric_update(self, metric_handle: Any, op: str, value: float) -> None:
        self._call("metric_update", metric_handle, op, value)

    def metric_value(self, metric_handle: Any) -> float:
        return self._call("metric_value", metric_handle)

    def metric_family_delete(self, handle: Any) -> None:
        self._call("metric_family_delete", handle)

    def metric_delete(self, handle: Any) -> None:
        self._call("metric_delete", handle)

    def load_model(self, name: str, config: str, files: dict) -> None:
        self._call("load_model", name, config, files)

    def unload_model(self, name: str, unload_dependents: bool) -> None:
        self._call("unload_model", name, unload_dependents)

    def is_model_ready(self, name: str, version: str) -> bool:
        return bool(self._call("is_model_ready", name, version))


def main(argv: list[str]) -> None:
    source_dir, exec_fd, async_fd, in_fd, out_fd, in_size, out_size, name = argv
    # Ctrl-C in a terminal reaches the whole process group: the server decides when the
    # stub ends (FINALIZE, or EOF when the server is gone).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exec_conn = ipc.Connection(socket.socket(fileno=int(exec_fd)))
    async_conn = ipc.Connection(socket.socket(fileno=int(async_fd)))
    in_ring = ipc.Ring(int(in_fd), int(in_size))
    out_ring = ipc.Ring(int(out_fd), int(out_size))
    os.close(int(in_fd))
    os.close(int(out_fd))
    stub = Stub(exec_conn, async_conn, in_ring, out_ring, name)
    import triton_python_backend_utils  # noqa: F401  (found through source_dir)

    # Imports of the model itself resolve in the interpreter's own environment.
    if sys.path and sys.path[0] == source_dir:
        del sys.path[0]
    threading.Thread(target=stub.read_async, name="stub-reader", daemon=True).start()
    exec_conn.send((ipc.DONE, None, {"pid": os.getpid()}))  # hello: ready for commands
    profile_dir = os.environ.get("TRITIUM_STUB_PROFILE")
    if profile_dir:  # development aid: a cProfile of the main thread per stub
        import cProfile

        cProfile.runctx("stub.serve()", globals(), {"stub": stub},
                        os.path.join(profile_dir, f"{name}.{os.getpid()}.prof"))
    else:
        stub.serve()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


# How the server starts a stub: its argv[1] is the directory holding `tritium` and
# `triton_python_backend_utils`, put first on sys.path only until they are imported. numpy
# comes first, from the interpreter's own environment (that directory may be the server's
# site-packages, whose numpy need not suit an execution environment's Python).
BOOTSTRAP = (
    "import sys, numpy; sys.path.insert(0, sys.argv[1]); "
    "from tritium.backends.python.stub_main import main; main(sys.argv[1:])"
)
