"""One model instance (Triton's ModelInstanceState): its current stub process, restarted in the
background when it dies. The requests the dead stub held fail as Triton fails them; requests
that arrive while it restarts wait for the new stub (up to their timeout, at most
`RESTART_HOLD_SECONDS`) instead of failing too."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tritium.backend import InferenceRequest, ModelInstance, release_wakeups

from .process_requests import process_requests
from .stub_launcher import StubProcess, not_healthy

if TYPE_CHECKING:
    from .model_state import PythonModelState

log = logging.getLogger("tritium.backends.python")

# The longest a request waits for a restarting stub (a stub that cannot start in this time
# is not coming back soon).
RESTART_HOLD_SECONDS = 30.0


class InstanceState:
    """One model instance: its current stub, restarted when it dies."""

    def __init__(self, instance: ModelInstance, model_state: PythonModelState) -> None:
        self.instance = instance
        self.name = instance.name
        self.model_state = model_state
        config = instance.model.config
        self.decoupled = config.model_transaction_policy.decoupled
        self.output_names = [output.name for output in config.output]
        self.stub: StubProcess | None = None
        self._lock = threading.Lock()
        self._restarted = threading.Condition(self._lock)  # a restart ended, either way
        self._restarting = False
        self._restarter: threading.Thread | None = None
        self._closing = False

    def launch(self) -> StubProcess:
        """A started stub with the model initialized in it."""
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
        settings["gpu_inputs"] = self.model_state.gpu_inputs
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

    def execute(self, requests: Sequence[InferenceRequest], each: bool = False) -> None:
        """One execution of `requests`, or with `each` one per request, in order."""
        stub = self.stub
        if stub is None or stub.dead:
            release_wakeups()  # the previous execution's held answers go before the wait
            self._restart_soon()
            stub = self._wait_for_restart(_hold(requests))
        if stub is None:
            error = not_healthy(self.name)
            for request in requests:
                sender = request.response_sender
                if sender is not None and not sender.is_completed:
                    request.respond_error(error)
            return
        process_requests(stub, [[request] for request in requests] if each else [requests])

    def _wait_for_restart(self, timeout: float) -> StubProcess | None:
        """The restarted stub, once it is up (None if it is not within `timeout` seconds)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._restarting and not self._closing:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._restarted.wait(remaining)
            stub = self.stub
        return stub if stub is not None and not stub.dead else None

    def is_ready(self) -> bool:
        stub = self.stub
        return stub is not None and not stub.dead and stub.ready()

    def stub_died(self, stub: StubProcess) -> None:
        """Called by a stub's reader thread when the stub has died."""
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
                self._restarted.notify_all()
            return
        with self._lock:
            self._restarting = False
            self._restarted.notify_all()
            if self._closing:
                stub.stop()
                return
            self.stub = stub
        log.info("Stub process '%s' restarted", self.name)

    def close(self) -> None:
        """Finalize the model in its stub and end it (waiting out a restart under way)."""
        with self._lock:
            self._closing = True
            self._restarted.notify_all()
            restarter = self._restarter
        if restarter is not None and restarter is not threading.current_thread():
            restarter.join()  # a stub being started is stopped by the restart thread itself
        with self._lock:
            stub, self.stub = self.stub, None
        if stub is not None:
            stub.finalize()


def _hold(requests: Sequence[InferenceRequest]) -> float:
    """How long these requests may wait for a restart: the shortest timeout among them."""
    timeouts = [r.timeout_us / 1e6 for r in requests if r.timeout_us > 0]
    return min([RESTART_HOLD_SECONDS, *timeouts])
