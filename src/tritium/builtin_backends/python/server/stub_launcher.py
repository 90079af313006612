"""One stub process (Triton's stub_launcher.cc): started with its sockets and rings, given
commands on the exec socket, finalized and stopped, and declared dead when it goes away.

The instance's execute thread drives the exec socket itself (`process_requests.py`); the
async socket is served by the stub's `AsyncChannel` (`async_channel.py`).
"""

from __future__ import annotations

import itertools
import logging
import os
import socket
import subprocess
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from tritium.backend import InferenceRequest, ModelInstance, TritonError

from ..stub.main import BOOTSTRAP
from ..wire import messages
from ..wire.shm_ring import Ring
from ..wire.shm_tensors import TensorWriter
from .async_channel import AsyncChannel
from .model_state import PythonModelState

log = logging.getLogger("tritium.backends.python")

_STOP_TIMEOUT_S = 10.0
# Where `tritium` and `triton_python_backend_utils` live, for the stub's sys.path: as many
# levels up from this file as its module name is deep.
_SOURCE_DIR = str(Path(__file__).resolve().parents[len(__name__.split(".")) - 1])


def not_healthy(instance_name: str) -> TritonError:
    """What requests of an instance whose stub died (or is restarting) get, as in Triton."""
    return TritonError.internal(f"Stub process '{instance_name}' is not healthy.")


class StubOwner(Protocol):
    """The instance a stub serves (`InstanceState`), told when the stub dies; a protocol so
    that the instance imports the launcher and not the other way round."""

    name: str
    decoupled: bool
    output_names: list[str]
    instance: ModelInstance

    def stub_died(self, stub: StubProcess) -> None: ...


class StubProcess:
    """A stub process and the server's end of its sockets and rings. `owner` is the instance
    it serves (None for a short-lived auto-complete stub), told when the stub dies."""

    def __init__(
        self, model_state: PythonModelState, name: str, owner: StubOwner | None
    ) -> None:
        self.model_state = model_state
        self.backend = model_state.backend
        self.server = model_state.model.server
        self.name = name
        self.owner = owner
        self.decoupled = owner.decoupled if owner is not None else False
        self.output_names = owner.output_names if owner is not None else []
        self.process: subprocess.Popen | None = None
        self.exec_conn: messages.Connection | None = None
        self.async_conn: messages.Connection | None = None
        self.to_stub: Ring | None = None  # we produce, the stub consumes
        self.from_stub: Ring | None = None  # the stub produces, we consume
        self.writer: TensorWriter | None = None
        self.dead = False
        self.has_is_ready = False
        self.stopping = False
        self._death_lock = threading.Lock()
        self.handles = itertools.count(1)
        # Requests the stub may still answer, by the handle the stub knows them by.
        self.requests: dict[int, InferenceRequest] = {}
        # Decoupled requests the model rescheduled: the handle they keep.
        self.rescheduled: dict[InferenceRequest, int] = {}
        self.channel = AsyncChannel(self)
        self._reader: threading.Thread | None = None

    def start(self) -> None:
        """Start the process and wait for its hello; then serve its async socket."""
        size = self.backend.ring_bytes
        prefix = self.backend.region_prefix
        exec_conn, exec_theirs = messages.channel()
        async_conn, async_theirs = messages.channel()
        theirs = (*exec_theirs, *async_theirs)
        to_fd = from_fd = -1
        try:
            self.to_stub, to_fd = Ring.create(size, f"{prefix}_{self.name}_to_stub")
            self.from_stub, from_fd = Ring.create(size, f"{prefix}_{self.name}_from_stub")
            self.writer = TensorWriter(self.to_stub, f"{prefix}_{self.name}")
            inherited = (*(sock.fileno() for sock in theirs), to_fd, from_fd)
            command = [
                self.model_state.python, "-c", BOOTSTRAP, _SOURCE_DIR,
                *(str(fd) for fd in inherited), str(size), str(size), self.name,
            ]
            log.debug("Starting Python backend stub: %s", " ".join(command))
            self.process = subprocess.Popen(command, pass_fds=inherited, stdin=subprocess.DEVNULL)
        finally:
            for sock in theirs:
                sock.close()
            for fd in (to_fd, from_fd):
                if fd >= 0:
                    os.close(fd)
        self.exec_conn = exec_conn
        self.async_conn = async_conn
        exec_conn.sock.settimeout(self.backend.stub_timeout_s)
        try:
            self.exec_conn.recv()  # the stub's hello
        except (EOFError, OSError) as exc:
            code = self.process.poll()
            reason = "timed out" if isinstance(exc, socket.timeout) else f"exited ({code})"
            raise TritonError.internal(
                f"Launch stub process failed for '{self.name}': the stub {reason} before "
                f"connecting (interpreter {self.model_state.python})"
            ) from None
        finally:
            exec_conn.sock.settimeout(None)
        self._reader = threading.Thread(
            target=self.channel.serve, name=f"{self.name}-stub-reader", daemon=True
        )
        self._reader.start()

    def command(self, message: tuple) -> tuple[str | None, Any]:
        """Send a command on the exec socket; (error, value) of the stub's answer."""
        assert self.exec_conn is not None
        try:
            self.exec_conn.send(message)
            reply = self.exec_conn.recv()
        except (EOFError, OSError):
            self.on_death()
            raise not_healthy(self.name) from None
        return reply[1], reply[2]

    def initialize(self, settings: dict[str, Any]) -> None:
        """Import the model and run its initialize(args) (INIT)."""
        error, info = self.command((messages.INIT, settings))
        # What initialize() logged is handled first: a load's failure is reported with it.
        sent = info.get("async_sent") if isinstance(info, dict) else None
        if isinstance(sent, int):
            self.channel.wait_processed(sent, _STOP_TIMEOUT_S)
        if error is not None:
            log.error("Failed to initialize Python stub: %s", error)
            raise TritonError.internal(error)
        self.has_is_ready = bool(info and info.get("has_is_ready"))

    def ready(self) -> bool:
        """The model's is_ready(), when it has one."""
        if not self.has_is_ready:
            return True
        return self.channel.query_ready()

    def finalize(self) -> None:
        """Run the model's finalize() and end the process."""
        self.stopping = True
        if not self.dead and self.exec_conn is not None:
            try:
                error, sent = self.command((messages.FINALIZE,))
                if error is not None:
                    log.error("finalize() of '%s' failed: %s", self.name, error)
                # What finalize() logged (or sent) on the async channel is handled before the
                # channel closes.
                if isinstance(sent, int):
                    self.channel.wait_processed(sent, _STOP_TIMEOUT_S)
            except TritonError:
                pass
        self.stop()

    def stop(self) -> None:
        """End the process (if still running) and free everything. A stub exits by itself
        after FINALIZE, or as soon as its sockets close."""
        self.stopping = True
        for conn in (self.exec_conn, self.async_conn):
            if conn is not None and not conn.closed:
                conn.close()
        process = self.process
        if process is not None:
            try:
                process.wait(_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        reader = self._reader
        if reader is not None and reader is not threading.current_thread():
            reader.join(_STOP_TIMEOUT_S)
        self.on_death()
        for ring in (self.to_stub, self.from_stub):
            if ring is not None:
                ring.close()

    def fail_unanswered(self, requests: Iterable[InferenceRequest]) -> None:
        """Answer those of `requests` still open with Triton's 'not healthy' error."""
        error = not_healthy(self.owner.name if self.owner is not None else self.name)
        for request in requests:
            sender = request.response_sender
            if sender is not None and not sender.is_completed:
                try:
                    request.respond_error(error)
                except TritonError:
                    pass

    def on_death(self) -> None:
        """The stub is gone (or going): fail what it held, free what it made. Idempotent;
        a second caller waits until the first has finished."""
        with self._death_lock:
            if self.dead:
                return
            self.dead = True
            pending, self.requests = self.requests, {}
            self.rescheduled = {}
            self.fail_unanswered(pending.values())
            self.channel.stub_died()
            process = self.process
            if process is not None and process.poll() is None and not self.stopping:
                process.kill()
            if process is not None and not self.stopping:
                try:
                    process.wait(_STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    pass
        if not self.stopping and self.owner is not None:
            self.owner.stub_died(self)
