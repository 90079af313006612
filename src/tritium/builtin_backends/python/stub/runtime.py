"""The stub's implementation of pb_utils' runtime (`triton_python_backend_utils._Runtime`):
everything a model asks of the server while it runs. Responses sent through a response sender,
BLS requests, log lines and calls (custom metrics, cancellation, model readiness) go out on
the async socket from whatever thread the model uses; the stub's reader thread hands back the
replies (`on_reply`, `on_bls_response`).

Runs in the stub process: standard library, numpy and the transport only.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
import traceback
from functools import partial
from typing import Any, Protocol

from ..wire import messages
from ..wire.shm_ring import Ring
from ..wire.shm_tensors import TensorWriter, open_block
from .bls_call import BlsCall, ResponseIterator
from .pb_wire import WIRE_OF_CODE, pb_response, wire_response, wire_tensors


class RuntimeHost(Protocol):
    """What the runtime needs of the stub that creates it (`pb_stub.Stub`): a protocol, so
    that the stub imports the runtime and not the other way round."""

    exec_conn: messages.Connection
    async_conn: messages.Connection
    in_ring: Ring
    writer: TensorWriter
    pb: Any  # the model's triton_python_backend_utils module
    initialized: bool
    finalizing: bool


class _Waiter:
    """One pending call to the server, answered by the reader thread."""

    __slots__ = ("event", "error", "value")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.error: str | None = None
        self.value: Any = None


class StubRuntime:
    """pb_utils' runtime in a stub: talks to the server for the model."""

    def __init__(self, stub: RuntimeHost) -> None:
        self.stub = stub
        self.async_conn = stub.async_conn
        self.writer = stub.writer
        self._ids = itertools.count(1)
        self._calls: dict[int, _Waiter] = {}
        self._bls: dict[int, BlsCall] = {}
        # The channel made for the child of a fork in progress, per forking thread.
        self._forking = threading.local()

    # -- processes the model forks -----------------------------------------------------------

    def follow_forks(self) -> None:
        """Give each process forked from this one (a `multiprocessing` worker, `os.fork()`)
        a channel of its own to the server, as Triton's stub lets a forked child make BLS
        requests: the child must not share the async socket (another process's frames would
        interleave with ours, and our reader thread would take its replies) nor produce into
        the rings (their positions are this process's)."""
        os.register_at_fork(before=self._before_fork, after_in_parent=self._after_fork_parent,
                            after_in_child=self._after_fork_child)

    def _before_fork(self) -> None:
        ours, theirs = messages.channel()
        conn: messages.Connection | None = ours
        try:
            self.async_conn.send((messages.ATTACH,), [sock.fileno() for sock in theirs])
        except OSError:
            ours.drop()
            conn = None  # the server has gone: the child gets no channel
        finally:
            for sock in theirs:
                sock.close()
        self._forking.conn = conn

    def _after_fork_parent(self) -> None:
        conn = getattr(self._forking, "conn", None)
        self._forking.conn = None
        if conn is not None:
            conn.drop()  # the child's now

    def _after_fork_child(self) -> None:
        conn = getattr(self._forking, "conn", None)
        self._forking = threading.local()
        self._calls = {}
        self._bls = {}
        self.writer = TensorWriter(None, self.writer.name)
        # The sockets this process inherited are the stub's (or its parent's channel): held
        # open here, they would hide the stub's death from the server until this one ends.
        self.stub.exec_conn.drop()
        self.async_conn.drop()  # kept when the server was gone at the fork: every send fails
        if conn is not None:
            self.async_conn = conn
            threading.Thread(target=self._read_forked, args=(conn,), name="stub-fork-reader",
                             daemon=True).start()

    def _read_forked(self, conn: messages.Connection) -> None:
        """A forked child's reader thread: the replies to its own calls and BLS requests.
        When the server closes the channel (the stub died, the server stopped), whoever waits
        is released with an error."""
        for message in conn.messages():
            try:
                if message[0] == messages.BLS_RESPONSE:
                    self.on_bls_response(message)
                elif message[0] == messages.REPLY:
                    self.on_reply(message)
            except Exception:
                traceback.print_exc()
        for call_id in list(self._calls):
            self.on_reply((messages.REPLY, call_id, "the server closed the connection", None))
        for bls_id in list(self._bls):
            self.on_bls_response((messages.BLS_RESPONSE, bls_id, None, messages.FINAL, None))

    # -- what the reader thread hands back ---------------------------------------------------

    def on_reply(self, message: tuple) -> None:
        _, call_id, error, value = message
        waiter = self._calls.pop(call_id, None)
        if waiter is not None:
            waiter.error, waiter.value = error, value
            waiter.event.set()

    def on_bls_response(self, message: tuple) -> None:
        _, bls_id, wire, flags, block_descriptor = message
        call = self._bls.get(bls_id)
        final = bool(flags & messages.FINAL)
        if final:
            self._bls.pop(bls_id, None)
        response = None
        if wire is not None:
            block = open_block(block_descriptor, self.stub.in_ring, self.async_conn.fds)
            try:
                response = pb_response(self.stub.pb, wire, block)
            finally:
                if block is not None:
                    block.release()
        if call is not None:
            call.put(response, final)

    # -- the runtime pb_utils calls ----------------------------------------------------------

    def _call(self, name: str, *args: Any) -> Any:
        call_id = next(self._ids)
        waiter = _Waiter()
        self._calls[call_id] = waiter
        self.async_conn.send((messages.CALL, call_id, name, args))
        waiter.event.wait()
        if waiter.error is not None:
            raise self.stub.pb.TritonModelException(waiter.error)
        return waiter.value

    def send_response(self, request_handle: Any, response: Any, flags: int) -> None:
        fds: list[int] = []
        wire = block = None
        if response is not None:
            outputs = response._output_tensors if response._error is None else ()
            descriptors, block, fds = self.writer.pack(wire_tensors(outputs))
            wire = wire_response(response, descriptors)
        try:
            self.async_conn.send((messages.RESPONSE, request_handle, wire, flags, block), fds)
        finally:
            for fd in fds:
                os.close(fd)

    def is_cancelled(self, request_handle: Any) -> bool:
        return bool(self._call("is_cancelled", request_handle))

    def _start_bls(self, request: Any, decoupled: bool) -> tuple[int, BlsCall, tuple, list[int]]:
        """Pack a BLS request and register its call, to which the reader thread hands the
        responses: (id, call, message, fds), the message not sent yet."""
        stub = self.stub
        if not stub.initialized or stub.finalizing:
            raise stub.pb.TritonModelException(
                "BLS is only supported during the 'execute' function."
            )
        host, on_device = self._bls_inputs(request)
        descriptors, block, fds = self.writer.pack(wire_tensors(host))
        wire = (
            request._model_name, int(request._model_version), request._request_id,
            request._correlation_id, request._flags, int(request._timeout),
            request._parameters, sorted(request._requested_output_names), descriptors,
            on_device, request._trace._request_handle,
        )
        bls_id = next(self._ids)
        call = BlsCall(stub.pb, decoupled)
        call.cancel = partial(self._call, "bls_cancel", bls_id)
        if on_device:
            call.keep = list(request._inputs)  # the callee maps their memory until the end
        self._bls[bls_id] = call
        return bls_id, call, (messages.BLS, bls_id, wire, decoupled, block), fds

    def _bls_inputs(self, request: Any) -> tuple[list, list]:
        """A BLS request's inputs: those that go in host memory, and the GPU tensors that go
        by CUDA IPC, [(name, CudaIpcArray)]. GPU tensors go by IPC only to a python model
        taking GPU inputs (FORCE_CPU_ONLY_INPUT_TENSORS "no"), and only where cuda-python is
        installed; otherwise they are copied to the host here, once."""
        inputs = request._inputs
        if all(tensor._array is not None for tensor in inputs):
            return inputs, []
        from . import cuda_ipc

        if not (cuda_ipc.available() and self._call("takes_gpu_inputs", request._model_name)):
            return inputs, []
        host, on_device = [], []
        for tensor in inputs:
            if tensor._array is None:
                try:
                    on_device.append((tensor._name, cuda_ipc.export(
                        tensor._device, WIRE_OF_CODE[tensor._dtype])))
                    continue
                except RuntimeError:
                    # Memory CUDA IPC cannot export (an empty tensor without an allocation, a
                    # cuMemCreate or stream-ordered pool such as torch's expandable segments):
                    # it goes as a host copy, as to a callee that takes CPU inputs.
                    pass
            host.append(tensor)
        return host, on_device

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
            return ResponseIterator(call)
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
            self.async_conn.send((messages.LOG, int(level), str(message), filename, line))
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
