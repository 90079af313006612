"""InferenceServer: the one object frontends talk to.

It owns the BackendManager, the RepositoryScanner, the ModelLifeCycle and the
ModelRepositoryManager, routes each request to the model version that serves it, and answers
health, metadata, configuration and statistics questions. Frontends see only this class, `request` and `errors`.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, AsyncIterator, Callable

from tritonclient.grpc import model_config_pb2 as mc

from . import __version__
from .backend.manager import BackendManager
from .config import model_config_to_json
from .custom_metrics import MetricRegistry
from .errors import TritonError
from .logging_settings import LogSettings
from .model import ModelRetired, StatisticsSnapshot, TritonModel
from .repository import (
    ModelLifeCycle,
    ModelReadyState,
    ModelRepositoryManager,
    RepositoryPoller,
    RepositoryScanner,
    VersionStatus,
)
from .request import RESPONSE_COMPLETE_FINAL, Deliver, InferenceRequest, InferenceResponse
from .shared_memory import SharedMemoryManager
from .response_cache import CacheSnapshot, ResponseCache
from .scheduler.rate_limiter import RateLimiter
from .tensor import wire_datatype
from .trace_settings import TraceSetting, TraceSettings

log = logging.getLogger("tritium.server")

# The protocol extensions this server implements (reported by server metadata), in Triton
# 2.51's order; schedule_policy is the request `priority` and `timeout` parameters.
EXTENSIONS = [
    "classification",
    "sequence",
    "model_repository",
    "model_repository(unload_dependents)",
    "schedule_policy",
    "model_configuration",
    "binary_tensor_data",
    "parameters",
    "statistics",
    "trace",
    "logging",
]
# Listed only when clients may register regions (--allow-client-shm=true), where Triton lists
# them: after model_configuration.
SHARED_MEMORY_EXTENSIONS = ["system_shared_memory", "cuda_shared_memory"]


@dataclass
class ServerOptions:
    """What the server needs from the command line (tritonserver's flags of the same names)."""

    model_repositories: list[Path]
    backend_directories: list[Path] = field(default_factory=list)
    backend_config: dict[str, dict[str, str]] = field(default_factory=dict)
    model_control_mode: str = "none"
    load_models: list[str] = field(default_factory=list)
    repository_poll_secs: float = 15.0
    strict_readiness: bool = True
    exit_on_error: bool = True
    auto_complete: bool = True
    model_load_thread_count: int = 4
    exit_timeout_secs: float = 30.0
    server_id: str = "triton"
    # The process's log settings (the logging extension changes them at run time).
    log_settings: LogSettings = field(default_factory=LogSettings)
    # `--trace-config`: the trace settings at start-up.
    trace_default: TraceSetting = field(default_factory=TraceSetting)
    allow_client_shm: bool = False
    # --cache-config: cache name -> {setting: value}, e.g. {"local": {"size": "1048576"}}.
    cache_config: dict[str, dict[str, str]] = field(default_factory=dict)
    # --rate-limit (off | execution_count) and --rate-limit-resource (name, count, device).
    rate_limit: str = "off"
    rate_limit_resources: list[tuple[str, int, int]] = field(default_factory=list)
    # --ray-address: the Ray cluster that models asking for it place their instances on.
    ray_address: str = ""


class InferenceServer:
    def __init__(self, options: ServerOptions) -> None:
        self.options = options
        self.id = options.server_id
        self.version = __version__
        self.metrics = MetricRegistry()
        self.backends = BackendManager(
            options.backend_directories, options.backend_config, server=self
        )
        self.repository = RepositoryScanner(
            options.model_repositories, auto_complete=options.auto_complete
        )
        self.response_cache = ResponseCache.from_config(options.cache_config)
        self.lifecycle = ModelLifeCycle(
            self.repository, self.backends, thread_count=options.model_load_thread_count,
            response_cache=self.response_cache,
            rate_limiter=(RateLimiter(options.rate_limit_resources)
                          if options.rate_limit == "execution_count" else None),
        )
        self.instance_placement: Any = None  # a RayPlacement with --ray-address
        if options.ray_address:
            # Only here: a server without --ray-address never imports Ray.
            from .ray.placement import RayPlacement

            self.instance_placement = RayPlacement(options.ray_address, self)
        self.log_settings = options.log_settings
        self.trace_settings = TraceSettings(options.trace_default)
        self.control = ModelRepositoryManager(
            self.repository,
            self.lifecycle,
            mode=options.model_control_mode,
            thread_count=options.model_load_thread_count,
        )
        self._poller: RepositoryPoller | None = None
        # Client shared-memory regions (the shared-memory extensions).
        self.shared_memory = SharedMemoryManager(options.allow_client_shm)
        self._live = False
        self._stopping = False

    # -- life ----------------------------------------------------------------------------------

    def start(self) -> None:
        """Load the models the control mode names; raise if --exit-on-error and any failed."""
        self.repository.check_repositories()
        mode = self.options.model_control_mode
        if mode in ("none", "poll"):
            errors = self.control.start(None)
        elif mode == "explicit":
            names = self.options.load_models
            if "*" in names and len(names) > 1:
                raise TritonError.invalid_arg(
                    "Wildcard model name '*' must be the ONLY startup model if specified at all."
                )
            errors = self.control.start(None if "*" in names else names)
        else:
            raise TritonError.invalid_arg(f"unknown model control mode '{mode}'")
        self._live = True
        if self.options.exit_on_error and (errors or self._any_failed()):
            raise TritonError.internal("failed to load all models")
        if mode == "poll":
            self._poller = RepositoryPoller(self.control, self.options.repository_poll_secs)
            self._poller.start()

    def shutdown(self) -> None:
        """Wait for in-flight requests (up to --exit-timeout-secs), then finalize everything:
        instances and models (ModelLifeCycle), then backends (BackendManager)."""
        self._stopping = True
        if self._poller is not None:
            self._poller.stop()
        self.lifecycle.unload_all(self.options.exit_timeout_secs)
        self.control.remove_overrides()
        self.backends.finalize_all()
        if self.instance_placement is not None:
            self.instance_placement.close()
        self.shared_memory.close()
        self._live = False

    def _any_failed(self) -> bool:
        return any(
            s.state is ModelReadyState.UNAVAILABLE
            for versions in self.lifecycle.status().values()
            for s in versions.values()
        )

    # -- health and metadata ---------------------------------------------------------------

    def is_live(self) -> bool:
        return self._live

    def is_ready(self) -> bool:
        if not self._live or self._stopping:
            return False
        if not self.options.strict_readiness:
            return True
        # Versions unloaded on purpose (an unload request, a reload) do not count.
        return all(
            s.state is ModelReadyState.READY
            for versions in self.lifecycle.status().values()
            for s in versions.values()
            if s.state is not ModelReadyState.UNLOADING and s.reason != "unloaded"
        )

    def metadata(self) -> dict[str, Any]:
        extensions = list(EXTENSIONS)
        if self.shared_memory.enabled:
            at = extensions.index("model_configuration") + 1
            extensions[at:at] = SHARED_MEMORY_EXTENSIONS
        return {"name": self.id, "version": self.version, "extensions": extensions}

    def model_ready(self, name: str, version: str | int = "") -> bool:
        try:
            model = self.lifecycle.get(name, parse_version(version))
        except TritonError:
            return False
        return model.is_ready()

    def model_metadata(self, name: str, version: str = "") -> dict[str, Any]:
        model = self._model(name, version)
        config = model.config
        batch = [-1] if config.max_batch_size > 0 else []

        def tensors(items: Any) -> list[dict[str, Any]]:
            return [
                {
                    "name": t.name,
                    "datatype": wire_datatype(t.data_type),
                    "shape": batch + list(t.dims),
                }
                for t in items
            ]

        return {
            "name": model.name,
            # Triton lists only the asked-for version when the request names one.
            "versions": [str(model.version)] if version else self.ready_versions(name),
            "platform": config.platform or config.backend,
            "inputs": tensors(config.input),
            "outputs": tensors(config.output),
        }

    def ready_versions(self, name: str) -> list[str]:
        versions = self.lifecycle.status().get(name, {})
        return [str(v) for v, s in sorted(versions.items()) if s.state is ModelReadyState.READY]

    def model_config(self, name: str, version: str = "") -> mc.ModelConfig:
        return self._model(name, version).config

    def model_labels(self, name: str, version: str = "") -> dict[str, list[str]]:
        """Output name -> the labels classification names classes with."""
        return self._model(name, version).labels

    def model_config_json(self, name: str, version: str = "") -> dict[str, Any]:
        return model_config_to_json(self.model_config(name, version))

    def model_states(self) -> dict[str, dict[int, VersionStatus]]:
        return self.lifecycle.status()

    def statistics(self) -> list[StatisticsSnapshot]:
        return [
            s.model.statistics.snapshot()
            for versions in self.lifecycle.status().values()
            for s in versions.values()
            if s.model is not None and s.state is ModelReadyState.READY
        ]

    def model_statistics(self, name: str = "", version: str = "") -> list[StatisticsSnapshot]:
        """The statistics extension: every ready model version, one model's ready versions, or
        one version (name "" means every model, whatever valid version is given, as in Triton)."""
        number = parse_version(version)
        if not name:
            return sorted(self.statistics(), key=lambda s: (s.name, int(s.version)))
        ready = {
            v: s.model for v, s in self.lifecycle.status().get(name, {}).items()
            if s.model is not None and s.state is ModelReadyState.READY
        }
        if not ready:
            raise TritonError.invalid_arg(f"requested model '{name}' is not available")
        if number == -1:
            return [ready[v].statistics.snapshot() for v in sorted(ready)]
        if number not in ready:
            raise TritonError.invalid_arg(
                f"requested model version is not available for model '{name}'"
            )
        return [ready[number].statistics.snapshot()]
    def cache_statistics(self) -> CacheSnapshot | None:
        """The response cache's figures (None when --cache-config set none)."""
        return self.response_cache.snapshot() if self.response_cache is not None else None

    def pending_requests(self) -> list[tuple[str, str, int]]:
        """(model, version, requests accepted but not yet answered) for each loaded version."""
        return [
            (name, str(v), s.model.inflight)
            for name, versions in self.lifecycle.status().items()
            for v, s in versions.items()
            if s.model is not None and s.state is ModelReadyState.READY
        ]

    # -- model repository extension ---------------------------------------------------------

    def repository_index(self, ready_only: bool = False) -> list[dict[str, str]]:
        """POST /v2/repository/index: name, and version/state/reason once a model was tried."""
        return self.control.index(ready_only)

    def load_model(self, name: str, parameters: dict[str, Any] | None = None) -> None:
        """Load or reload a model (blocks until it settles). `parameters`: `config` (JSON
        text) and `file:<version>/<path>` (bytes) overrides, as the load request gave them."""
        self.control.load(name, dict(parameters or {}))

    def unload_model(self, name: str, unload_dependents: bool = False) -> None:
        self.control.unload(name, unload_dependents)

    def _model(self, name: str, version: str) -> TritonModel:
        return self.lifecycle.get(name, parse_version(version))

    # -- inference ---------------------------------------------------------------------------

    def infer_async(self, request: InferenceRequest, deliver: Deliver) -> None:
        """Route `request` to its model; every response reaches `deliver`, from any thread.

        The one way in for every caller: frontends (through `infer`/`infer_stream`) and
        backends making their own requests (BLS, through `model.server`).
        """
        if self._stopping:
            raise TritonError.unavailable("Server is stopping")
        while True:
            model = self.lifecycle.get(request.model_name, request.model_version)
            try:
                return model.submit(request, deliver)
            except ModelRetired:
                # A reload swapped this version out after the lookup: ask again, the lookup
                # now finds its replacement (or says the model is gone).
                continue

    def infer_nowait(
        self, request: InferenceRequest, callback: Callable[[InferenceResponse], None]
    ) -> None:
        """Start one request on a non-decoupled model; `callback(response)` runs later on the
        running event loop, with the response (its `error` set when the request failed).

        Raises TritonError at once for a request that cannot be routed or validated. The
        backend's thread wakes the loop once per request, for the final response.
        """
        loop = asyncio.get_running_loop()
        kept: list[InferenceResponse] = []

        def deliver(response: InferenceResponse | None, flags: int) -> None:
            # On the backend's thread: keep the responses, wake the loop once, for the final one.
            if response is not None:
                kept.append(response)
            if flags & RESPONSE_COMPLETE_FINAL:
                try:
                    loop.call_soon_threadsafe(_finish, callback, kept)
                except RuntimeError:
                    pass  # the loop has closed: nobody is left to read the response

        self.infer_async(request, deliver)

    def infer_each(
        self,
        request: InferenceRequest,
        callback: Callable[[InferenceResponse | None, bool], None],
    ) -> None:
        """Start `request` (decoupled or not); `callback(response, final)` runs on the running
        event loop for each response as it comes, `final` true on the last (whose response may
        be None: a decoupled model's flag-only final).

        Raises TritonError at once for a request that cannot be routed or validated. For
        frontends that answer from callbacks rather than tasks (HTTP generate).
        """
        loop = asyncio.get_running_loop()
        self.infer_async(request, _on_loop(
            loop, lambda response, flags: callback(response, bool(flags & RESPONSE_COMPLETE_FINAL))
        ))

    async def infer(self, request: InferenceRequest) -> InferenceResponse:
        """Run one request on a non-decoupled model and return its response.

        Raises TritonError for a request that cannot be routed or validated, and for an error
        response from the backend.
        """
        done: asyncio.Future[InferenceResponse] = asyncio.get_running_loop().create_future()
        self.infer_nowait(request, partial(_resolve, done))
        try:
            response = await done
        except asyncio.CancelledError:
            request.cancelled = True
            raise
        if response.error is not None:
            raise response.error
        return response

    async def infer_stream(
        self, request: InferenceRequest
    ) -> AsyncIterator[tuple[InferenceResponse | None, bool]]:
        """Every response of `request` as it comes, with whether it is the final one.

        For decoupled models (any number of responses, possibly an empty final) and ordinary
        ones alike. Closing the iterator early marks the request cancelled.
        """
        queue: asyncio.Queue[tuple[InferenceResponse | None, bool]] = asyncio.Queue()
        self.infer_each(request, lambda response, final: queue.put_nowait((response, final)))
        final = False
        try:
            while not final:
                response, final = await queue.get()
                yield response, final
        finally:
            if not final:
                request.cancelled = True


def _finish(callback: Callable[[InferenceResponse], None], kept: list[InferenceResponse]) -> None:
    """An `infer_nowait` request's final response (the last one a decoupled model sent)."""
    callback(kept[-1] if kept else InferenceResponse(
        error=TritonError.internal("model sent no response")
    ))


def _resolve(done: asyncio.Future, response: InferenceResponse) -> None:
    if not done.done():
        done.set_result(response)


def _on_loop(loop: asyncio.AbstractEventLoop, callback: Deliver) -> Deliver:
    """A Deliver for backend threads that runs `callback` on `loop`.

    A response that arrives after the loop closed (a backend thread finishing during shutdown)
    has nobody left to read it and is dropped.
    """

    def deliver(response: InferenceResponse | None, flags: int) -> None:
        try:
            loop.call_soon_threadsafe(callback, response, flags)
        except RuntimeError:
            pass

    return deliver


_LONG_LIMIT = 2**63


def parse_version(version: str | int) -> int:
    """Triton's GetModelVersionFromString: "" means -1 (the version policy picks)."""
    if isinstance(version, int):
        return version
    if version == "":
        return -1
    try:
        value = int(version.strip()) if version.strip().lstrip("+-").isdigit() else None
    except ValueError:
        value = None
    if value is None or not -_LONG_LIMIT <= value < _LONG_LIMIT:  # what std::stol can read
        raise TritonError.invalid_arg(
            f"failed to get model version from specified version string '{version}' "
            "(details: stol), version should be an integral value > 0"
        )
    if value < 0:
        raise TritonError.invalid_arg(
            f"invalid model version specified '{version}' , version should be an integral "
            "value > 0"
        )
    return value
