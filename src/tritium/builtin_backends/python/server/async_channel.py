"""The server's end of a stub's async socket: one reader thread routes everything the stub
sends on its own, and readiness queries go out on it.

What arrives: responses sent through a response sender (decoupled models, or a model that
answers before returning), BLS requests (`request_executor.py`), log lines, calls (custom
metrics in `custom_metrics.py`, cancellation, readiness, loading and unloading of other
models), readiness answers, and the stub's death (EOF), which fails the requests it held and
restarts it. The frames handled so far are counted, so an execute can wait until the
responses its batch sent through a response sender have been delivered ahead of the ones it
returned.

Responses of a decoupled model are counted in the model's response statistics (per response
index of a request, as a compiled backend reports them through
TRITONBACKEND_ModelInstanceReportResponseStatistics): a response's compute infer runs from the
previous response of its request (or the start of its execution) until its frame arrives, its
compute output while its tensors are copied out; a flags-only final is an empty response.
"""

from __future__ import annotations

import itertools
import logging
import socket
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from tritium.backend import (
    RESPONSE_COMPLETE_FINAL,
    InferenceRequest,
    InferenceResponse,
    TritonError,
)

from ..wire import messages
from ..wire.shm_ring import Ring
from ..wire.shm_tensors import TensorWriter, open_block
from .custom_metrics import StubMetrics
from .gpu_input_models import takes_gpu_inputs
from .process_requests import response_from_wire
from .request_executor import RequestExecutor
from .stub_link import StubLink

log = logging.getLogger("tritium.backends.python")
model_log = logging.getLogger("tritium.backends.python.model")

_READY_TIMEOUT_S = 2.0
_LOG_LEVELS = {0: logging.INFO, 1: logging.WARNING, 2: logging.ERROR, 3: logging.DEBUG}


class AsyncChannel:
    """What the stub sends on its own, and what the server asks of the running model."""

    def __init__(self, stub: StubLink) -> None:
        self.stub = stub
        self.executor = RequestExecutor(stub, stub)
        # The channels of processes forked from the stub, closed when the stub dies.
        self._forked: set[messages.Connection] = set()
        self._forked_lock = threading.Lock()
        self.metrics = StubMetrics(stub.backend.metric_families, stub.server)
        # Async-socket frames handled so far, and whether an execute waits for more of them.
        self.processed = 0
        self._waiters = 0
        self._processed_cond = threading.Condition()
        self._ready_queries: dict[int, list[Any]] = {}
        # Decoupled requests that sent a response: the next response's index, and when the
        # last one was done (touched by the reader thread only).
        self._response_marks: dict[int, tuple[int, int]] = {}
        self._query_ids = itertools.count(1)
        self._calls: dict[str, Callable[..., Any]] = {
            "is_cancelled": self._is_cancelled,
            "is_model_ready": self._is_model_ready,
            "load_model": self._load_model,
            "unload_model": self._unload_model,
            "takes_gpu_inputs": takes_gpu_inputs,
            "metric_family_new": self.metrics.family_new,
            "metric_new": self.metrics.metric_new,
            "metric_update": self.metrics.metric_update,
            "metric_value": self.metrics.metric_value,
            "metric_delete": self.metrics.metric_delete,
            "metric_family_delete": self.metrics.family_delete,
        }

    def serve(self) -> None:
        """The reader thread: handle each frame until EOF, then declare the stub dead."""
        stub = self.stub
        conn = stub.async_conn
        assert conn is not None
        handlers: dict[int, Callable[[tuple], None]] = {
            messages.RESPONSE: self._on_response,
            messages.BLS: self.executor.on_bls,
            messages.LOG: self._on_log,
            messages.CALL: partial(self._on_call, conn=conn, executor=self.executor),
            messages.READY_REPLY: self._on_ready_reply,
            messages.ATTACH: partial(self._on_attach, conn=conn),
        }
        for message in conn.messages():
            try:
                handlers[message[0]](message)
            except Exception:
                log.exception("stub '%s': failed to handle a message", stub.name)
            self.processed += 1
            if self._waiters:
                with self._processed_cond:
                    self._processed_cond.notify_all()
        if not stub.stopping:
            stub.on_death()

    def wait_processed(self, count: int, timeout: float | None = None) -> None:
        """Until `count` frames have been handled (or the stub is dead, or `timeout` s)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._processed_cond:
            self._waiters += 1
            try:
                while self.processed < count and not self.stub.dead:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        return
                    self._processed_cond.wait(left)
            finally:
                self._waiters -= 1

    def stub_died(self) -> None:
        """Release whoever waits on the stub (its forked processes too: their channels
        close), and drop the metrics it made."""
        with self._processed_cond:
            self._processed_cond.notify_all()
        with self._forked_lock:
            forked, self._forked = self._forked, set()
        for conn in forked:
            conn.close()
        for query in list(self._ready_queries.values()):
            query[1] = False
            query[0].set()
        self.metrics.drop()

    def query_ready(self) -> bool:
        """Ask the model's is_ready(); False when it does not answer in time."""
        stub = self.stub
        assert stub.async_conn is not None
        query_id = next(self._query_ids)
        query: list[Any] = [threading.Event(), False]
        self._ready_queries[query_id] = query
        try:
            stub.async_conn.send((messages.READY_QUERY, query_id))
            if not query[0].wait(_READY_TIMEOUT_S):
                log.warning("is_ready() of '%s' did not answer in %ss", stub.name,
                            _READY_TIMEOUT_S)
                return False
            return bool(query[1])
        except OSError:
            return False
        finally:
            self._ready_queries.pop(query_id, None)

    def _on_ready_reply(self, message: tuple) -> None:
        _, query_id, ready = message
        query = self._ready_queries.get(query_id)
        if query is not None:
            query[1] = ready
            query[0].set()

    def _on_response(self, message: tuple) -> None:
        arrived = time.perf_counter_ns()
        _, handle, wire, flags, block_descriptor = message
        stub = self.stub
        final = flags & RESPONSE_COMPLETE_FINAL
        request = stub.requests.pop(handle, None) if final else stub.requests.get(handle)
        if final and request is not None and stub.rescheduled:
            stub.rescheduled.pop(request, None)
        response = None
        if wire is not None:
            assert stub.async_conn is not None and stub.from_stub is not None
            block = open_block(block_descriptor, stub.from_stub, stub.async_conn.fds)
            try:
                response = response_from_wire(wire, block)
            finally:
                if block is not None:
                    block.release()
        if request is None or request.response_sender is None:
            return  # already answered (failed, or the stub restarted)
        if request.response_sender.is_completed:
            return
        if stub.decoupled and stub.owner is not None:
            self._report_response(handle, request, response, arrived, bool(final))
        request.response_sender.send(response, flags)

    def _report_response(self, handle: int, request: InferenceRequest,
                         response: InferenceResponse | None, arrived: int, final: bool) -> None:
        assert self.stub.owner is not None
        mark = self._response_marks.pop(handle, None)
        index, start = mark if mark is not None else (0, request.exec_start_ns or arrived)
        end = time.perf_counter_ns()
        error = response.error if response is not None else None
        output_start = arrived if response is not None and error is None else 0
        try:
            self.stub.owner.instance.report_response_statistics(
                index, min(start, arrived), output_start, end, error)
        except TritonError:
            log.debug("response statistics not recorded", exc_info=True)
        if not final:
            self._response_marks[handle] = (index + 1, end)

    def _on_log(self, message: tuple) -> None:
        _, level, text, filename, line = message
        # The model's own file and line head the line (the log formatter reads them).
        model_log.log(_LOG_LEVELS.get(level, logging.INFO), "%s", text,
                      extra={"source_file": filename, "source_line": line})

    # -- processes forked from the stub --------------------------------------------------

    def _on_attach(self, message: tuple, conn: messages.Connection) -> None:
        """A process forked from the stub (or from such a process) sent its channel's sockets:
        serve its BLS requests, calls and log lines on a thread of their own."""
        receiving, sending = (socket.socket(fileno=conn.fds.popleft()) for _ in range(2))
        forked = messages.Connection(receiving, sending)
        with self._forked_lock:
            if self.stub.dead:
                forked.close()
                return
            self._forked.add(forked)
        threading.Thread(target=self._serve_forked, args=(forked,), daemon=True,
                         name=f"{self.stub.name}-forked-reader").start()

    def _serve_forked(self, conn: messages.Connection) -> None:
        endpoint = _ForkedEndpoint(conn, TensorWriter(None, f"{self.stub.name}-forked"))
        executor = RequestExecutor(self.stub, endpoint)
        handlers: dict[int, Callable[[tuple], None]] = {
            messages.BLS: executor.on_bls,
            messages.LOG: self._on_log,
            messages.CALL: partial(self._on_call, conn=conn, executor=executor),
            messages.ATTACH: partial(self._on_attach, conn=conn),
        }
        for message in conn.messages():
            try:
                handlers[message[0]](message)
            except Exception:
                log.exception("stub '%s': failed to handle a forked process's message",
                              self.stub.name)
        with self._forked_lock:
            self._forked.discard(conn)
        conn.close()

    # -- calls the stub makes ---------------------------------------------------------------

    def _on_call(self, message: tuple, conn: messages.Connection,
                 executor: RequestExecutor) -> None:
        """A call from the stub (or a process forked from it), answered on its channel."""
        if message[2] in ("is_model_ready", "load_model", "unload_model"):
            # May ask a stub's is_ready() (this one's included) or take seconds to load a
            # model: not on this reader thread.
            threading.Thread(target=self._answer_call, args=(message, conn, executor),
                             daemon=True).start()
        else:
            self._answer_call(message, conn, executor)

    def _answer_call(self, message: tuple, conn: messages.Connection,
                     executor: RequestExecutor) -> None:
        _, call_id, name, args = message
        error = value = None
        try:
            method = executor.cancel if name == "bls_cancel" else self._calls.get(name)
            if method is None:
                raise TritonError.unsupported(f"unknown call '{name}'")
            value = method(*args)
        except TritonError as exc:
            error = exc.message
        except Exception as exc:
            error = str(exc) or type(exc).__name__
        try:
            conn.send((messages.REPLY, call_id, error, value))
        except OSError:
            pass

    def _is_cancelled(self, handle: int) -> bool:
        request = self.stub.requests.get(handle)
        return bool(request is not None and request.cancelled)

    def _is_model_ready(self, name: str, version: str) -> bool:
        version = str(version).strip()
        try:
            number = int(version) if version else -1
        except ValueError:
            raise TritonError.invalid_arg(
                f"failed to get model version from specified version string '{version}'"
            ) from None
        return bool(self.stub.server.model_ready(name, number))

    def _load_model(self, name: str, config: str, files: dict) -> None:
        parameters: dict[str, Any] = dict(files)
        if config:
            parameters["config"] = config
        self.stub.server.load_model(name, parameters)

    def _unload_model(self, name: str, unload_dependents: bool) -> None:
        self.stub.server.unload_model(name, unload_dependents)


class _ForkedEndpoint:
    """The channel of a process forked from the stub, as the BLS executor sees it: no ring in
    either direction (`TensorWriter` without one)."""

    def __init__(self, conn: messages.Connection, writer: TensorWriter) -> None:
        self.async_conn: messages.Connection | None = conn
        self.from_stub: Ring | None = None
        self.writer: TensorWriter | None = writer
