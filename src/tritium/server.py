"""InferenceServer: the one object frontends talk to.

Triton's InferenceServer (tritonserver.h's TRITONSERVER_Server*). It owns the
BackendManager, the RepositoryScanner, the ModelLifeCycle and the ModelRepositoryManager,
routes each request to the model version that serves it (`resolve` once per request, then
that version's `submit`; `infer_async` does both, thread-safe, for BLS and ensembles), and
answers health, metadata, configuration and statistics questions. Frontends see only this
class, `request` and `errors`; the asyncio side of a request is `frontend/loop_bridge.py`'s.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from tritonclient.grpc import model_config_pb2 as mc

from .backend.cmdline_config import DEFAULT_BACKEND_DIRECTORY, with_server_settings
from .backend.manager import BackendManager
from .config import model_config_to_json
from .custom_metrics import MetricRegistry
from .errors import TritonError
from .gpus import GpuInventory, discover, log_inventory
from .logging_settings import LogSettings
from .model import LoadedModel, ModelRetired, ResolvedModel, StatisticsSnapshot
from .repository import (
    DEFAULT_REPOAGENT_DIRECTORY,
    ModelControlQueue,
    ModelLifeCycle,
    ModelReadyState,
    ModelRepositoryManager,
    RepositoryPoller,
    RepositoryScanner,
    VersionStatus,
    repository_location,
)
from .request import Deliver, InferenceRequest, parse_version
from .response_cache import CacheSnapshot
from .response_cache import from_config as cache_from_config
from .scheduler.rate_limiter import RateLimiter
from .shared_memory import SharedMemoryManager
from .tensor import wire_datatype
from .trace_settings import TraceSetting, TraceSettings
from .version import TRITON_VERSION

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

# How long past --exit-timeout-secs the models may take to finalize once their executions are
# over or given up on (Triton checks its live models once a second until the timeout).
FINALIZE_GRACE_S = 1.0


@dataclass
class ServerOptions:
    """What the server needs from the command line (tritonserver's flags of the same names)."""

    # Local folders, and cloud repositories' URLs (repository.cloud.repository_location).
    model_repositories: list[str | Path]
    backend_directories: list[Path] = field(default_factory=list)
    # --repoagent-directory: where the repository agents models name are found.
    repoagent_directory: Path = DEFAULT_REPOAGENT_DIRECTORY
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
    # --model-config-name: read configs/<name>.pbtxt instead of config.pbtxt where it exists.
    model_config_name: str = ""
    # --model-load-retry-count: further tries for a model version that fails to load.
    model_load_retry_count: int = 0
    # --ray-address: the Ray cluster that models asking for it place their instances on.
    ray_address: str = ""
    # --min-supported-compute-capability: GPUs below it get no model instance (None: Triton's
    # 6.0).
    min_supported_compute_capability: float | None = None
    # --model-load-gpu-limit: device id -> fraction of its memory above which loads are refused.
    model_load_gpu_limit: dict[int, float] = field(default_factory=dict)
    # The GPUs to place instances on; None: ask NVML at start-up (tritium.gpus.discover).
    gpus: GpuInventory | None = None
    # --metrics-config summary_latencies=true: the summaries' (quantile, error) pairs; None:
    # no summaries.
    summary_quantiles: tuple[tuple[float, float], ...] | None = None
    # --model-namespacing: each repository's models in a namespace of their own (a name may
    # then be in several repositories).
    model_namespacing: bool = False


class InferenceServer:
    def __init__(self, options: ServerOptions) -> None:
        self.options = options
        self.id = options.server_id
        self.version = TRITON_VERSION
        self.metrics = MetricRegistry()
        gpus = (options.gpus if options.gpus is not None
                else discover(options.min_supported_compute_capability))
        self.gpus = replace(gpus, load_limits=dict(options.model_load_gpu_limit))
        log_inventory(self.gpus)
        # Triton hands every backend the server's own settings next to --backend-config's.
        backend_config = with_server_settings(
            options.backend_config, auto_complete=options.auto_complete,
            min_compute_capability=self.gpus.min_compute_capability,
            backend_directory=(options.backend_directories or [DEFAULT_BACKEND_DIRECTORY])[0],
        )
        self.backends = BackendManager(
            options.backend_directories, backend_config, server=self
        )
        self.repository = RepositoryScanner(
            options.model_repositories, auto_complete=options.auto_complete,
            gpus=self.gpus, config_name=options.model_config_name,
            namespacing=options.model_namespacing,
        )
        self.response_cache = cache_from_config(options.cache_config)
        self.lifecycle = ModelLifeCycle(
            self.repository, self.backends, thread_count=options.model_load_thread_count,
            response_cache=self.response_cache,
            rate_limiter=(RateLimiter(options.rate_limit_resources)
                          if options.rate_limit == "execution_count" else None),
            server=self,
            load_retry_count=options.model_load_retry_count,
            summary_quantiles=options.summary_quantiles,
        )
        if options.ray_address:
            # Only here: a server without --ray-address never imports Ray.
            from .ray.placement import RayPlacement

            self.backends.placement = RayPlacement(
                options.ray_address, self, self.id, options.backend_directories, backend_config,
            )
        self.log_settings = options.log_settings
        self.trace_settings = TraceSettings(options.trace_default)
        self.control = ModelRepositoryManager(
            self.repository,
            self.lifecycle,
            mode=options.model_control_mode,
            thread_count=options.model_load_thread_count,
            repoagent_directory=options.repoagent_directory,
        )
        # Load and unload requests: one at a time per model, on a bounded pool.
        self.control_queue = ModelControlQueue(options.model_load_thread_count)
        self._poller: RepositoryPoller | None = None
        # Client shared-memory regions (the shared-memory extensions).
        self.shared_memory = SharedMemoryManager(options.allow_client_shm, self.gpus)
        self._live = False
        self._stopping = False
        self._exit_deadline: float | None = None

    # -- life ----------------------------------------------------------------------------------

    def start(self) -> None:
        """Load the models the control mode names; raise if --exit-on-error and any failed.

        A model repository that does not exist fails the start; without --exit-on-error the
        server goes on, as Triton's does, neither live nor ready, loading nothing (its
        frontends still answer health and metadata)."""
        try:
            self.repository.check_repositories()
        except TritonError as exc:
            if self.options.exit_on_error:
                raise
            log.error("%s: %s", exc.code.status_text, exc.message)
            return
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
        if mode == "poll" and self.options.repository_poll_secs > 0:  # 0: start-up only
            self._poller = RepositoryPoller(self.control, self.options.repository_poll_secs)
            self._poller.start()

    def stop_accepting(self, timeout: float | None = None) -> None:
        """The exit begins: refuse new requests and start the clock that `drain` and
        `shutdown` end by: `timeout` seconds, what is left of --exit-timeout-secs once the
        HTTP port's open connections were served (None: all of it)."""
        if self._exit_deadline is None:
            log.info("Waiting for in-flight requests to complete.")  # Triton's words
            if timeout is None:
                timeout = self.options.exit_timeout_secs
            self._exit_deadline = time.monotonic() + max(timeout, 0.0)
        self._stopping = True

    def drain(self, timeout: float | None = None) -> None:
        """Let the requests in flight (queued or executing) finish, until `timeout` (see
        `stop_accepting`) after `stop_accepting`; those still queued then are answered
        UNAVAILABLE. The frontends keep serving meanwhile, as Triton's do."""
        self.stop_accepting(timeout)
        assert self._exit_deadline is not None
        self.lifecycle.drain(self._exit_deadline)

    def shutdown(self) -> None:
        """Wait for the executions in flight (until --exit-timeout-secs after `stop_accepting`),
        then finalize everything: instances and models (ModelLifeCycle), then backends
        (BackendManager).

        Bounded as Triton's stop is: if the models are not all unloaded by then (an execution
        that runs on, a finalize that hangs), INTERNAL "Exit timeout expired. Exiting
        immediately." is raised and the unloading is left to its (daemon) thread; the caller
        is expected to exit."""
        self.drain()
        deadline = self._exit_deadline
        assert deadline is not None
        outcome: Future[None] = Future()

        def unload() -> None:
            try:
                self._unload_everything(deadline)
            except BaseException as exc:
                outcome.set_exception(exc)
            else:
                outcome.set_result(None)

        threading.Thread(target=unload, name="tritium-shutdown", daemon=True).start()
        try:
            outcome.result(max(deadline - time.monotonic(), 0.0) + FINALIZE_GRACE_S)
        except FutureTimeout:  # the builtin TimeoutError only from Python 3.11
            raise TritonError.internal("Exit timeout expired. Exiting immediately.") from None
        finally:
            self._live = False
            self.trace_settings.close()

    def _unload_everything(self, deadline: float) -> None:
        if self._poller is not None:
            self._poller.stop()
        self.control_queue.close()
        self.lifecycle.unload_all(max(deadline - time.monotonic(), 0.0))
        self.control.remove_overrides()
        self.repository.close()
        self.backends.finalize_all()
        if self.backends.placement is not None:
            self.backends.placement.close()
        self.shared_memory.close()

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
            model = self._model(name, version)
        except TritonError:
            return False
        return model.is_ready()

    def model_metadata(self, name: str, version: str | int = "") -> dict[str, Any]:
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
        versions = self.lifecycle.status().get(self.control.identify(name), {})
        return [str(v) for v, s in sorted(versions.items()) if s.state is ModelReadyState.READY]

    def model_config(self, name: str, version: str | int = "", namespace: str = ""
                     ) -> mc.ModelConfig:
        """The final configuration of the version serving (name, version); `namespace`: the
        one an ensemble step gives (--model-namespacing)."""
        return self._model(name, version, namespace).config

    def model_config_json(self, name: str, version: str | int = "") -> dict[str, Any]:
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
            v: s.model for v, s in self.lifecycle.status().get(self.control.identify(name),
                                                                {}).items()
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

    def pending_requests(self) -> list[tuple[str, str, str, int]]:
        """(model, its namespace, version, requests accepted but not yet answered) for each
        loaded version."""
        return [
            (s.model.name, s.model.statistics.namespace, str(v), s.model.inflight)
            for versions in self.lifecycle.status().values()
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
        self.request_load(name, parameters).result()

    def unload_model(self, name: str, unload_dependents: bool = False) -> None:
        self.request_unload(name, unload_dependents).result()

    def request_load(self, name: str, parameters: dict[str, Any] | None = None
                     ) -> Future[None]:
        """`load_model` without blocking: the future has its outcome. Loads and unloads of
        one model run one at a time, and identical requests waiting together run once
        (repository/control_queue.py)."""
        parameters = dict(parameters or {})
        key = ("load", tuple(sorted(parameters.items())))
        return self.control_queue.submit(name, key, partial(self.control.load, name, parameters))

    def request_unload(self, name: str, unload_dependents: bool = False) -> Future[None]:
        """`unload_model` without blocking (as `request_load`)."""
        return self.control_queue.submit(name, ("unload", unload_dependents),
                                         partial(self.control.unload, name, unload_dependents))

    def register_model_repository(
            self, repository: str | Path,
            name_mapping: dict[str, str] | list[tuple[str, str]] | None = None) -> None:
        """TRITONSERVER_ServerRegisterModelRepository: another repository (EXPLICIT mode), its
        directories optionally under other names ({directory: model name}, or (directory,
        name) pairs, as the C API gives them: one directory may take several names)."""
        pairs = list(name_mapping.items()) if isinstance(name_mapping, dict) else name_mapping
        self.control.register_repository(repository_location(repository), list(pairs or []))

    def unregister_model_repository(self, repository: str | Path) -> None:
        """TRITONSERVER_ServerUnregisterModelRepository (loaded models stay loaded)."""
        self.control.unregister_repository(repository_location(repository))

    def _model(self, name: str, version: str | int, namespace: str = "") -> LoadedModel:
        return self.lifecycle.get(self.control.identify(name, namespace), parse_version(version))

    # -- inference ---------------------------------------------------------------------------

    def resolve(self, name: str, version: str | int = "", namespace: str = "") -> ResolvedModel:
        """The READY version serving (name, version), held for one request: read its config
        and labels to decode, then `submit` the request to it (a context manager: closing it
        unsubmitted gives it back). Decode, inference and encode then see one version, and a
        reload meanwhile cannot unload it (Triton's request holding its model). `namespace`:
        an ensemble step's (--model-namespacing), else the name alone says which model."""
        number = parse_version(version)
        while True:
            # Stopping, the models' schedulers refuse new work, as Triton's do (an ensemble
            # takes a request, whose steps are refused: "in ensemble 'E', Server is ...").
            model = self.lifecycle.get(self.control.identify(name, namespace), number)
            try:
                return model.hold()
            except ModelRetired:
                # A reload swapped this version out after the lookup: ask again, the lookup
                # now finds its replacement (or says the model is gone).
                continue

    def infer_async(self, request: InferenceRequest, deliver: Deliver) -> None:
        """Route `request` to its model; every response reaches `deliver`, from any thread.

        The thread-safe way in for every caller: frontends (through `frontend/loop_bridge.py`,
        or a model they resolved), backends making their own requests (BLS, through
        `model.server`) and ensembles' steps. Raises TritonError for a request that cannot be
        routed or validated.
        """
        with self.resolve(request.model_name, request.model_version,
                          request.model_namespace) as model:
            model.submit(request, deliver)
