"""The python backend, server side: entry points, stub processes and what they ask of us.

One `StubProcess` per model instance. The instance's execute thread drives the *exec* socket
itself (send a batch, block for the stub's answer, send the returned responses on), so the
ordinary request costs no thread hop on this side. A reader thread per stub serves the *async*
socket: responses sent through a response sender (decoupled models), BLS requests (routed
through `model.server`, their responses written back as they come), log lines, custom-metric
calls, readiness answers, and the stub's death (EOF), which fails the requests it held and
restarts it.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from tritium.backend import (
    RESPONSE_COMPLETE_FINAL,
    Backend,
    BackendAttributes,
    Code,
    InferenceRequest,
    InferenceResponse,
    MetricKind,
    Model,
    ModelInstance,
    RequestedOutput,
    Tensor,
    TritonError,
)

from . import _ipc as ipc
from .stub_main import BOOTSTRAP

log = logging.getLogger("tritium.backends.python")
model_log = logging.getLogger("tritium.backends.python.model")

_DEFAULT_RING_BYTES = 4 * 1024 * 1024
_MIN_RING_BYTES = 64 * 1024
_DEFAULT_STUB_TIMEOUT_S = 30.0
_READY_TIMEOUT_S = 2.0
_STOP_TIMEOUT_S = 10.0
# Where `tritium` and `triton_python_backend_utils` live, for the stub's sys.path.
_SOURCE_DIR = str(Path(__file__).resolve().parents[3])
_LOG_LEVELS = {0: logging.INFO, 1: logging.WARNING, 2: logging.ERROR, 3: logging.DEBUG}
_METRIC_KINDS = {0: MetricKind.COUNTER, 1: MetricKind.GAUGE, 2: MetricKind.HISTOGRAM}


def _not_healthy(instance_name: str) -> TritonError:
    """What requests of an instance whose stub died (or is restarting) get, as in Triton."""
    return TritonError.internal(f"Stub process '{instance_name}' is not healthy.")


# -- backend ---------------------------------------------------------------------------------


class BackendState:
    def __init__(self, backend: Backend) -> None:
        config = backend.config
        self.ring_bytes = max(
            _int_setting(config, "shm-default-byte-size", _DEFAULT_RING_BYTES), _MIN_RING_BYTES
        )
        self.stub_timeout_s = float(
            _int_setting(config, "stub-timeout-seconds", int(_DEFAULT_STUB_TIMEOUT_S))
        )
        self.region_prefix = config.get(
            "shm-region-prefix-name", "tritium_python_backend_shm_region"
        )
        # A Python-based backend: DIR/<name>/model.py serves every model naming the backend.
        directory = backend.directory
        self.backend_model = (
            directory / "model.py"
            if directory is not None and (directory / "model.py").is_file()
            else None
        )
        # Custom metric families are shared by name across models: {name: [family, users]}.
        self.families: dict[str, list[Any]] = {}
        self.families_lock = threading.Lock()


def _int_setting(config: dict[str, str], key: str, default: int) -> int:
    value = config.get(key)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise TritonError.invalid_arg(
            f"backend config '{key}' must be an integer, got '{value}'"
        ) from None


def initialize(backend: Backend) -> None:
    backend.state = BackendState(backend)


def get_backend_attribute(backend: Backend, attributes: BackendAttributes) -> None:
    # Each instance is its own process: starting them together is safe and faster.
    attributes.set_parallel_model_instance_loading(True)


def finalize(backend: Backend) -> None:
    backend.state = None


# -- model -----------------------------------------------------------------------------------


class ModelState:
    def __init__(self, model: Model, backend_state: BackendState) -> None:
        self.model = model
        self.backend = backend_state
        self.name = model.name
        if backend_state.backend_model is not None:
            self.model_path = backend_state.backend_model
        else:
            filename = model.config.default_model_filename or "model.py"
            self.model_path = model.version_path / filename
        if not self.model_path.is_file():
            raise TritonError.invalid_arg(
                f"unable to find the Python model file '{self.model_path}' for model "
                f"'{model.name}'"
            )
        self._temporary_env: str | None = None
        self.python = self._interpreter()

    def _interpreter(self) -> str:
        entry = self.model.config.parameters.get("EXECUTION_ENV_PATH")
        if entry is None or not entry.string_value:
            return sys.executable
        raw = entry.string_value
        path = Path(raw.replace("$$TRITON_MODEL_DIRECTORY", str(self.model.repository_path)))
        if not path.is_absolute():
            path = self.model.repository_path / path
        if path.is_dir():
            return _python_in(path, raw)
        if path.is_file() and path.name.endswith((".tar.gz", ".tgz", ".tar")):
            target = tempfile.mkdtemp(prefix="tritium_python_env_")
            self._temporary_env = target
            log.info("Extracting Python execution env %s", path)
            with tarfile.open(path) as archive:
                if hasattr(tarfile, "tar_filter"):
                    # Keeps the links an environment has (bin/python -> /usr/bin/python3).
                    archive.extractall(target, filter="tar")
                else:  # pragma: no cover - Python without extraction filters
                    archive.extractall(target)
            return _python_in(Path(target), raw)
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
        raise TritonError.invalid_arg(
            f"EXECUTION_ENV_PATH '{raw}' of model '{self.name}' is neither a Python "
            "environment directory, a Python executable, nor an environment archive"
        )

    def settings(self) -> dict[str, Any]:
        """What a stub needs to import the model (INIT and AUTO_COMPLETE)."""
        return {
            "model_path": str(self.model_path),
            "model_dir": str(self.model.version_path),
            "model_name": self.name,
            "sys_path": [str(self.model_path.parent), str(self.model_path.parent.parent)],
        }

    def close(self) -> None:
        if self._temporary_env is not None:
            shutil.rmtree(self._temporary_env, ignore_errors=True)
            self._temporary_env = None


def _python_in(env: Path, raw: str) -> str:
    for name in ("bin/python3", "bin/python", "python.exe", "Scripts/python.exe"):
        candidate = env / name
        if candidate.exists():
            return str(candidate)
    raise TritonError.invalid_arg(
        f"EXECUTION_ENV_PATH '{raw}': no Python interpreter in {env} (expected bin/python)"
    )


def model_initialize(model: Model) -> None:
    state = ModelState(model, model.backend.state)
    model.state = state
    if model.auto_complete and _may_auto_complete(state.model_path):
        completed = _auto_complete(state)
        if completed is not None:
            model.set_config_json(completed)


def model_finalize(model: Model) -> None:
    state = model.state
    if isinstance(state, ModelState):
        state.close()
    model.state = None


def _may_auto_complete(model_path: Path) -> bool:
    """Whether the model can define `auto_complete_config`: its file, or a Python file next
    to it (a base class), names it. Saves a stub launch per model load for the many models
    that do not (a base class from an installed package is not seen: name the method in
    model.py, or let the config say everything)."""
    folders = {model_path.parent, model_path.parent.parent}
    for folder in folders:
        for path in [model_path] + sorted(folder.glob("*.py")):
            try:
                if "auto_complete_config" in path.read_text(errors="replace"):
                    return True
            except OSError:
                continue
    return False


def _auto_complete(state: ModelState) -> str | None:
    """Run the model's `auto_complete_config` in a short-lived stub, as Triton does."""
    stub = StubProcess(state, f"{state.name}_autocomplete", owner=None)
    try:
        stub.start()
        settings = state.settings()
        settings["config"] = state.model.config_json()
        error, result = stub.command((ipc.AUTO_COMPLETE, settings))
        if error is not None:
            log.error("Failed to initialize Python stub for auto-complete: %s", error)
            raise TritonError.internal(error)
        return result
    finally:
        stub.stop()


# -- instances -------------------------------------------------------------------------------


class InstanceState:
    """One model instance: its current stub, restarted when it dies."""

    def __init__(self, instance: ModelInstance, model_state: ModelState) -> None:
        self.instance = instance
        self.name = instance.name
        self.model_state = model_state
        config = instance.model.config
        self.decoupled = config.model_transaction_policy.decoupled
        self.output_names = [output.name for output in config.output]
        self.stub: StubProcess | None = None
        self._lock = threading.Lock()
        self._restarting = False
        self._restarter: threading.Thread | None = None
        self._closing = False

    def launch(self) -> "StubProcess":
        stub = StubProcess(self.model_state, self.name, owner=self)
        try:
            stub.start()
            stub.initialize(self._init_settings())
        except BaseException:
            stub.stop()
            raise
        return stub

    def _init_settings(self) -> dict[str, Any]:
        model = self.instance.model
        settings = self.model_state.settings()
        settings["decoupled"] = self.decoupled
        settings["args"] = {
            "model_config": model.config_json(),
            "model_instance_kind": self.instance.kind.replace("KIND_", ""),
            "model_instance_name": self.name,
            "model_instance_device_id": str(self.instance.device_id),
            "model_repository": str(model.repository_path),
            "model_version": str(model.version),
            "model_name": model.name,
        }
        return settings

    def execute(self, requests: Sequence[InferenceRequest]) -> None:
        stub = self.stub
        if stub is None or stub.dead:
            self._restart_soon()
            error = _not_healthy(self.name)
            for request in requests:
                sender = request.response_sender
                if sender is not None and not sender.is_completed:
                    request.respond_error(error)
            return
        stub.execute(requests)

    def is_ready(self) -> bool:
        stub = self.stub
        return stub is not None and not stub.dead and stub.ready()

    # Called by a stub's reader thread when the stub has died.
    def stub_died(self, stub: "StubProcess") -> None:
        log.error("Stub process '%s' is not healthy. Restarting...", self.name)
        self._restart_soon()

    def _restart_soon(self) -> None:
        with self._lock:
            if self._closing or self._restarting:
                return
            self._restarting = True
            self._restarter = threading.Thread(
                target=self._restart, name=f"{self.name}-restart", daemon=True
            )
            self._restarter.start()

    def _restart(self) -> None:
        try:
            old = self.stub
            if old is not None:
                old.stop()
            stub = self.launch()
        except BaseException as exc:
            log.error("failed to restart the stub of '%s': %s", self.name, exc)
            with self._lock:
                self._restarting = False
            return
        with self._lock:
            self._restarting = False
            if self._closing:
                stub.stop()
                return
            self.stub = stub
        log.info("Stub process '%s' restarted", self.name)

    def close(self) -> None:
        with self._lock:
            self._closing = True
            restarter = self._restarter
        if restarter is not None and restarter is not threading.current_thread():
            restarter.join()  # a stub being started is stopped by the restart thread itself
        with self._lock:
            stub, self.stub = self.stub, None
        if stub is not None:
            stub.finalize()


def model_instance_initialize(instance: ModelInstance) -> None:
    state = InstanceState(instance, instance.model.state)
    state.stub = state.launch()
    instance.state = state


def model_instance_execute(instance: ModelInstance, requests: Sequence[InferenceRequest]) -> None:
    instance.state.execute(requests)


def model_instance_ready(instance: ModelInstance) -> bool:
    state = instance.state
    return state is not None and state.is_ready()


def model_instance_finalize(instance: ModelInstance) -> None:
    state = instance.state
    if state is not None:
        state.close()
    instance.state = None


# -- one stub process ------------------------------------------------------------------------


class StubProcess:
    def __init__(self, model_state: ModelState, name: str, owner: InstanceState | None) -> None:
        self.model_state = model_state
        self.backend = model_state.backend
        self.server = model_state.model.server
        self.name = name
        self.owner = owner
        self.decoupled = owner.decoupled if owner is not None else False
        self.output_names = owner.output_names if owner is not None else []
        self.process: subprocess.Popen | None = None
        self.exec_conn: ipc.Connection | None = None
        self.async_conn: ipc.Connection | None = None
        self.to_stub: ipc.Ring | None = None  # we produce, the stub consumes
        self.from_stub: ipc.Ring | None = None  # the stub produces, we consume
        self.writer: ipc.TensorWriter | None = None
        self.dead = False
        self.has_is_ready = False
        self._stopping = False
        self._death_lock = threading.Lock()
        self._handles = itertools.count(1)
        # Requests the stub may still answer, by the handle the stub knows them by.
        self.requests: dict[int, InferenceRequest] = {}
        # Async-socket frames handled so far, and whether an execute waits for more of them.
        self.processed = 0
        self._waiters = 0
        self._processed_cond = threading.Condition()
        self._ready_queries: dict[int, list[Any]] = {}
        self._query_ids = itertools.count(1)
        self._reader: threading.Thread | None = None
        # Custom metrics this stub created: handle -> family name / (family, metric).
        self._families: dict[int, str] = {}
        self._metrics: dict[int, tuple[Any, Any]] = {}
        self._metric_ids = itertools.count(1)

    # -- life -------------------------------------------------------------------------------

    def start(self) -> None:
        size = self.backend.ring_bytes
        prefix = self.backend.region_prefix
        exec_ours, exec_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        async_ours, async_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        to_fd = from_fd = -1
        try:
            self.to_stub, to_fd = ipc.Ring.create(size, f"{prefix}_{self.name}_to_stub")
            self.from_stub, from_fd = ipc.Ring.create(size, f"{prefix}_{self.name}_from_stub")
            self.writer = ipc.TensorWriter(self.to_stub, f"{prefix}_{self.name}")
            inherited = (exec_theirs.fileno(), async_theirs.fileno(), to_fd, from_fd)
            command = [
                self.model_state.python, "-c", BOOTSTRAP, _SOURCE_DIR,
                *(str(fd) for fd in inherited), str(size), str(size), self.name,
            ]
            log.debug("Starting Python backend stub: %s", " ".join(command))
            self.process = subprocess.Popen(command, pass_fds=inherited, stdin=subprocess.DEVNULL)
        finally:
            exec_theirs.close()
            async_theirs.close()
            for fd in (to_fd, from_fd):
                if fd >= 0:
                    os.close(fd)
        self.exec_conn = ipc.Connection(exec_ours)
        self.async_conn = ipc.Connection(async_ours)
        exec_ours.settimeout(self.backend.stub_timeout_s)
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
            exec_ours.settimeout(None)
        self._reader = threading.Thread(
            target=self._read, name=f"{self.name}-stub-reader", daemon=True
        )
        self._reader.start()

    def command(self, message: tuple) -> tuple[str | None, Any]:
        """Send a command on the exec socket; (error, value) of the stub's answer."""
        assert self.exec_conn is not None
        try:
            self.exec_conn.send(message)
            reply = self.exec_conn.recv()
        except (EOFError, OSError):
            self._on_death()
            raise TritonError.internal(f"Stub process '{self.name}' is not healthy.") from None
        return reply[1], reply[2]

    def initialize(self, settings: dict[str, Any]) -> None:
        error, info = self.command((ipc.INIT, settings))
        if error is not None:
            log.error("Failed to initialize Python stub: %s", error)
            raise TritonError.internal(error)
        self.has_is_ready = bool(info and info.get("has_is_ready"))

    def finalize(self) -> None:
        """Run the model's finalize() and end the process."""
        self._stopping = True
        if not self.dead and self.exec_conn is not None:
            try:
                error, _ = self.command((ipc.FINALIZE,))
                if error is not None:
                    log.error("finalize() of '%s' failed: %s", self.name, error)
            except TritonError:
                pass
        self.stop()

    def stop(self) -> None:
        """End the process (if still running) and free everything. A stub exits by itself
        after FINALIZE, or as soon as its sockets close."""
        self._stopping = True
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
        self._on_death()
        for ring in (self.to_stub, self.from_stub):
            if ring is not None:
                ring.close()

    # -- death ------------------------------------------------------------------------------

    def _on_death(self) -> None:
        """The stub is gone (or going): fail what it held, free what it made. Idempotent;
        a second caller waits until the first has finished."""
        with self._death_lock:
            if self.dead:
                return
            self.dead = True
            error = _not_healthy(self.owner.name if self.owner is not None else self.name)
            pending, self.requests = self.requests, {}
            for request in pending.values():
                sender = request.response_sender
                if sender is not None and not sender.is_completed:
                    try:
                        request.respond_error(error)
                    except TritonError:
                        pass
            with self._processed_cond:
                self._processed_cond.notify_all()
            for query in list(self._ready_queries.values()):
                query[1] = False
                query[0].set()
            self._drop_metrics()
            process = self.process
            if process is not None and process.poll() is None and not self._stopping:
                process.kill()
            if process is not None and not self._stopping:
                try:
                    process.wait(_STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    pass
        if not self._stopping and self.owner is not None:
            self.owner.stub_died(self)

    # -- execute (the instance's thread) ------------------------------------------------------

    def execute(self, requests: Sequence[InferenceRequest]) -> None:
        """Hand one batch to the stub and wait for what its execute returned (the hot path:
        no thread hop, one frame each way)."""
        conn = self.exec_conn
        assert conn is not None and self.writer is not None
        table = self.requests
        tensors: list[tuple[str, str, Any]] = []
        handles: list[int] = []
        counts: list[int] = []
        for request in requests:
            handle = next(self._handles)
            table[handle] = request
            handles.append(handle)
            inputs = request.inputs
            for name, tensor in inputs.items():
                tensors.append((name, tensor.datatype, tensor.data))
            counts.append(len(inputs))
        fds: list[int] = []
        try:
            descriptors, block, fds = self.writer.pack(tensors)
            wire = []
            at = 0
            default_outputs = self.output_names
            for request, handle, count in zip(requests, handles, counts):
                outputs = request.requested_outputs
                wire.append((
                    handle, request.id, request.correlation_id, request.flags,
                    request.timeout_us,
                    json.dumps(request.parameters) if request.parameters else "{}",
                    [o.name for o in outputs] if outputs else default_outputs,
                    descriptors[at : at + count],
                ))
                at += count
            mark = time.perf_counter_ns()
            for request in requests:
                request.compute_input_end_ns = mark
            conn.send((ipc.EXECUTE, wire, block), fds)
            _, error, responses, async_sent, out_block = conn.recv()
        except (EOFError, OSError):
            self._on_death()  # fails every request it held, these included
            return
        except Exception as exc:
            self._forget(handles)
            raise TritonError.internal(f"failed to send requests to the stub: {exc}") from exc
        finally:
            for fd in fds:
                os.close(fd)
        mark = time.perf_counter_ns()
        for request in requests:
            request.compute_output_start_ns = mark
        if async_sent > self.processed:
            # Responses the model sent through a response sender come first.
            self._wait_processed(async_sent)
        if error is not None:
            failure = TritonError.internal(error)
            for request in requests:
                sender = request.response_sender
                if sender is not None and not sender.is_completed:
                    request.respond_error(failure)
        elif responses is not None:
            response_block = (None if out_block is None
                              else ipc.open_block(out_block, self.from_stub, conn.fds))
            try:
                for request, wire_response in zip(requests, responses):
                    if wire_response is not None:
                        request.response_sender.send(
                            _response(wire_response, response_block), RESPONSE_COMPLETE_FINAL
                        )
            finally:
                if response_block is not None:
                    response_block.release()
        if self.decoupled:
            for handle, request in zip(handles, requests):
                sender = request.response_sender
                if sender is None or sender.is_completed:
                    table.pop(handle, None)
        else:
            for handle in handles:
                del table[handle]

    def _forget(self, handles: list[int]) -> None:
        table = self.requests
        for handle in handles:
            table.pop(handle, None)

    def _wait_processed(self, count: int) -> None:
        with self._processed_cond:
            self._waiters += 1
            try:
                while self.processed < count and not self.dead:
                    self._processed_cond.wait()
            finally:
                self._waiters -= 1

    # -- readiness --------------------------------------------------------------------------

    def ready(self) -> bool:
        if not self.has_is_ready:
            return True
        assert self.async_conn is not None
        query_id = next(self._query_ids)
        query: list[Any] = [threading.Event(), False]
        self._ready_queries[query_id] = query
        try:
            self.async_conn.send((ipc.READY_QUERY, query_id))
            if not query[0].wait(_READY_TIMEOUT_S):
                log.warning("is_ready() of '%s' did not answer in %ss", self.name,
                            _READY_TIMEOUT_S)
                return False
            return bool(query[1])
        except OSError:
            return False
        finally:
            self._ready_queries.pop(query_id, None)

    # -- the reader thread: the async socket ------------------------------------------------

    def _read(self) -> None:
        conn = self.async_conn
        assert conn is not None
        handlers: dict[int, Callable[[tuple], None]] = {
            ipc.RESPONSE: self._on_response,
            ipc.BLS: self._on_bls,
            ipc.LOG: self._on_log,
            ipc.CALL: self._on_call,
            ipc.READY_REPLY: self._on_ready_reply,
        }
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                break
            try:
                handlers[message[0]](message)
            except Exception:
                log.exception("stub '%s': failed to handle a message", self.name)
            self.processed += 1
            if self._waiters:
                with self._processed_cond:
                    self._processed_cond.notify_all()
        if not self._stopping:
            self._on_death()

    def _on_response(self, message: tuple) -> None:
        _, handle, wire, flags, block_descriptor = message
        final = flags & RESPONSE_COMPLETE_FINAL
        request = self.requests.pop(handle, None) if final else self.requests.get(handle)
        response = None
        if wire is not None:
            assert self.async_conn is not None
            block = ipc.open_block(block_descriptor, self.from_stub, self.async_conn.fds)
            try:
                response = _response(wire, block)
            finally:
                if block is not None:
                    block.release()
        if request is None or request.response_sender is None:
            return  # already answered (failed, or the stub restarted)
        if request.response_sender.is_completed:
            return
        request.response_sender.send(response, flags)

    def _on_log(self, message: tuple) -> None:
        _, level, text, filename, line = message
        model_log.log(_LOG_LEVELS.get(level, logging.INFO), "%s:%s] %s", filename, line, text)

    def _on_ready_reply(self, message: tuple) -> None:
        _, query_id, ready = message
        query = self._ready_queries.get(query_id)
        if query is not None:
            query[1] = ready
            query[0].set()

    # -- BLS --------------------------------------------------------------------------------

    def _on_bls(self, message: tuple) -> None:
        _, bls_id, wire, decoupled, block_descriptor = message
        (model_name, model_version, request_id, correlation_id, flags, timeout_us,
         parameters, output_names, descriptors) = wire
        assert self.async_conn is not None
        block = ipc.open_block(block_descriptor, self.from_stub, self.async_conn.fds)
        inputs = {}
        try:
            for name, datatype, array in ipc.read_tensors(descriptors, block, True):
                inputs[name] = Tensor(name, datatype, tuple(array.shape), array)
        finally:
            if block is not None:
                block.release()

        if decoupled:
            def deliver(response: InferenceResponse | None, response_flags: int) -> None:
                self._send_bls_response(bls_id, response, response_flags)
        else:
            deliver = self._single_response_delivery(bls_id, model_name)

        try:
            request = InferenceRequest(
                model_name,
                model_version,
                id=request_id,
                inputs=inputs,
                requested_outputs=[RequestedOutput(name) for name in output_names],
                parameters=json.loads(parameters) if parameters and parameters != "{}" else {},
                correlation_id=correlation_id,
                flags=flags,
                timeout_us=timeout_us,
            )
            self.server.infer_async(request, deliver)
        except Exception as exc:
            error = exc if isinstance(exc, TritonError) else TritonError.internal(str(exc))
            message = error.message
            if error.code in (Code.NOT_FOUND, Code.UNAVAILABLE):
                # Triton's python backend checks readiness before routing, in these words.
                message = (
                    f"Failed for execute the inference request. Model '{model_name}' is not "
                    "ready."
                )
            self._send_bls_response(bls_id, InferenceResponse(error=TritonError(
                error.code, f"Model {model_name} - Error when running inference: {message}"
            )), RESPONSE_COMPLETE_FINAL)

    def _single_response_delivery(
        self, bls_id: int, model_name: str
    ) -> Callable[[InferenceResponse | None, int], None]:
        """Delivery for `exec(decoupled=False)`: one response, with the final flag. A model
        that answers otherwise is decoupled, which such a call does not support (Triton
        checks the model's policy before routing; the server API tells us by the answer)."""
        refused = False

        def deliver(response: InferenceResponse | None, flags: int) -> None:
            nonlocal refused
            if refused:
                return
            if response is not None and flags & RESPONSE_COMPLETE_FINAL:
                self._send_bls_response(bls_id, response, flags)
                return
            refused = True
            self._send_bls_response(bls_id, InferenceResponse(error=TritonError.internal(
                f"Model {model_name} - Error when running inference: Model {model_name} is "
                "using the decoupled. The current BLS request call doesn't support models "
                "using the decoupled transaction policy. Please use 'decoupled=True' argument "
                "to the 'exec' or 'async_exec' calls for decoupled models.'"
            )), RESPONSE_COMPLETE_FINAL)

        return deliver

    def _send_bls_response(self, bls_id: int, response: InferenceResponse | None,
                           flags: int) -> None:
        if self.dead or self.writer is None or self.async_conn is None:
            return
        fds: list[int] = []
        wire = block = None
        try:
            if response is not None:
                error = response.error
                tensors = (
                    [(t.name, t.datatype, t.data) for t in response.outputs]
                    if error is None else []
                )
                descriptors, block, fds = self.writer.pack(tensors)
                wire = (
                    descriptors,
                    None if error is None else (error.code.name, error.message),
                    json.dumps(response.parameters) if response.parameters else None,
                )
            self.async_conn.send((ipc.BLS_RESPONSE, bls_id, wire, flags, block), fds)
        except OSError:
            pass  # the stub has gone; its reader thread deals with that
        finally:
            for fd in fds:
                os.close(fd)

    # -- calls the stub makes (metrics, cancellation, model readiness) -----------------------

    def _on_call(self, message: tuple) -> None:
        if message[2] == "is_model_ready":
            # May ask a stub's is_ready(), this one's included: not on this reader thread.
            threading.Thread(target=self._answer_call, args=(message,), daemon=True).start()
        else:
            self._answer_call(message)

    def _answer_call(self, message: tuple) -> None:
        _, call_id, name, args = message
        error = value = None
        try:
            method = getattr(self, f"_call_{name}", None)
            if method is None:
                raise TritonError.unsupported(f"unknown call '{name}'")
            value = method(*args)
        except TritonError as exc:
            error = exc.message
        except Exception as exc:
            error = str(exc) or type(exc).__name__
        assert self.async_conn is not None
        try:
            self.async_conn.send((ipc.REPLY, call_id, error, value))
        except OSError:
            pass

    def _call_is_cancelled(self, handle: int) -> bool:
        request = self.requests.get(handle)
        return bool(request is not None and request.cancelled)

    def _call_is_model_ready(self, name: str, version: str) -> bool:
        version = str(version).strip()
        try:
            number = int(version) if version else -1
        except ValueError:
            raise TritonError.invalid_arg(
                f"failed to get model version from specified version string '{version}'"
            ) from None
        return bool(self.server.model_ready(name, number))

    def _call_load_model(self, name: str, config: str, files: dict) -> None:
        raise TritonError.unsupported(
            "model loading from a Python model is not supported by this server yet"
        )

    def _call_unload_model(self, name: str, unload_dependents: bool) -> None:
        raise TritonError.unsupported(
            "model unloading from a Python model is not supported by this server yet"
        )

    def _call_metric_family_new(self, name: str, description: str, kind: int) -> int:
        metric_kind = _METRIC_KINDS.get(kind)
        if metric_kind is None:
            raise TritonError.invalid_arg(f"unknown metric kind {kind}")
        backend = self.backend
        with backend.families_lock:
            entry = backend.families.get(name)
            if entry is None:
                family = self.server.metrics.family(name, description, metric_kind)
                backend.families[name] = [family, 1]
            else:
                if entry[0].kind is not metric_kind:
                    raise TritonError.invalid_arg(
                        f"metric family '{name}' already exists with a different kind"
                    )
                entry[1] += 1
        handle = next(self._metric_ids)
        self._families[handle] = name
        return handle

    def _family(self, handle: int) -> Any:
        name = self._families.get(handle)
        entry = self.backend.families.get(name) if name is not None else None
        if entry is None:
            raise TritonError.invalid_arg("the metric family has been deleted")
        return entry[0]

    def _call_metric_new(self, family_handle: int, labels: dict, buckets: Any) -> int:
        family = self._family(family_handle)
        metric = family.metric({str(k): str(v) for k, v in labels.items()}, buckets)
        handle = next(self._metric_ids)
        self._metrics[handle] = (family, metric)
        return handle

    def _metric(self, handle: int) -> Any:
        entry = self._metrics.get(handle)
        if entry is None:
            raise TritonError.invalid_arg("the metric has been deleted")
        return entry[1]

    def _call_metric_update(self, handle: int, op: str, value: float) -> None:
        metric = self._metric(handle)
        if op == "increment":
            metric.increment(value)
        elif op == "set":
            metric.set(value)
        elif op == "observe":
            metric.observe(value)
        else:
            raise TritonError.invalid_arg(f"unknown metric operation '{op}'")

    def _call_metric_value(self, handle: int) -> float:
        return float(self._metric(handle).value)

    def _call_metric_delete(self, handle: int) -> None:
        entry = self._metrics.pop(handle, None)
        if entry is not None:
            entry[0].remove(entry[1])

    def _call_metric_family_delete(self, handle: int) -> None:
        name = self._families.pop(handle, None)
        if name is None:
            return
        backend = self.backend
        with backend.families_lock:
            entry = backend.families.get(name)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] <= 0:
                del backend.families[name]
                self.server.metrics.remove(entry[0])

    def _drop_metrics(self) -> None:
        for handle in list(self._metrics):
            self._call_metric_delete(handle)
        for handle in list(self._families):
            self._call_metric_family_delete(handle)


def _response(wire: tuple, block: ipc.Block | None) -> InferenceResponse:
    """A response from the stub, its tensors copied out of shared memory."""
    descriptors, error, parameters = wire
    outputs = []
    if descriptors:
        assert block is not None
        array = block.array
        for name, datatype, shape, offset, nbytes in descriptors:
            outputs.append(Tensor(name, datatype, shape,
                                  array(datatype, shape, offset, nbytes, True)))
    response = InferenceResponse(outputs=outputs)
    if error is not None:
        code, message = error
        response.error = TritonError(Code[code], message)
    if parameters:
        response.parameters = json.loads(parameters)
    return response
