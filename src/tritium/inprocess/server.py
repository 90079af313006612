"""Server and Options: Triton's in-process server (`tritonserver.Server`) over Tritium's core.

`Server(options)` or `Server(model_repository=..., ...)` builds nothing until `start()`, which
checks the options (TypeError for a wrong type, InvalidArgumentError for a missing repository),
creates the core InferenceServer and loads the models its control mode names. Requests from
`Model.infer` go straight to the core: no port, no event loop of the server's own, no
serialisation. Python-backend models still run in their stub processes. Frontends are started
only when asked (`start_frontends`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import TritonError as CoreError
from ..logging_settings import LogSettings, TritonFormatter
from ..repository import repository_location
from ..server import InferenceServer, ServerOptions
from ..startup_tables import log_tables
from .enums import (
    CONTROL_MODE_NAMES,
    RATE_LIMIT_NAMES,
    LogFormat,
    MetricFormat,
    ModelControlMode,
    RateLimitMode,
)
from .errors import InternalError, InvalidArgumentError, UnavailableError, api_error
from .frontends import FrontendAddresses, Frontends, HeaderPattern, PolledMetrics
from .model import Model

log = logging.getLogger("tritium.inprocess")


@dataclass(slots=True)
class RateLimiterResource:
    name: str
    count: int
    device: int = 0


# Options' scalar fields (annotations are text here) and what a value must be an instance of.
_SCALAR_TYPES: dict[str, type | tuple[type, ...]] = {
    "str": str, "bool": bool, "int": int, "float": (int, float)}


@dataclass(slots=True)
class Options:
    """Triton's server options, by Triton's names. Options that concern pinned memory, CUDA
    memory pools, repository agents or host policies are accepted and have nothing to act on;
    min_supported_compute_capability, gpu_metrics, cpu_metrics and metrics_interval
    (milliseconds) act as tritonserver's --min-supported-compute-capability,
    --allow-gpu-metrics, --allow-cpu-metrics and --metrics-interval-ms."""

    model_repository: str | Path | list[str | Path] | None = field(default_factory=list)
    server_id: str = "triton"
    model_control_mode: ModelControlMode = ModelControlMode.NONE
    startup_models: list[str] = field(default_factory=list)
    strict_model_config: bool = False
    rate_limiter_mode: RateLimitMode = RateLimitMode.OFF
    rate_limiter_resources: list[RateLimiterResource] = field(default_factory=list)
    pinned_memory_pool_size: int = 1 << 28
    cuda_memory_pool_sizes: dict[int, int] = field(default_factory=dict)
    cache_config: dict[str, dict[str, Any]] = field(default_factory=dict)
    cache_directory: str = "/opt/tritonserver/caches"
    min_supported_compute_capability: float = 6.0
    exit_on_error: bool = True
    strict_readiness: bool = True
    exit_timeout: int = 30
    buffer_manager_thread_count: int = 0
    model_load_thread_count: int = 4
    model_load_retry_count: int = 0
    model_namespacing: bool = False
    enable_peer_access: bool = True
    log_file: str | None = None
    log_info: bool = False
    log_warn: bool = False
    log_error: bool = False
    log_format: LogFormat = LogFormat.DEFAULT
    log_verbose: int = 0
    metrics: bool = True
    gpu_metrics: bool = True
    cpu_metrics: bool = True
    metrics_interval: int = 2000
    backend_directory: str = "/opt/tritonserver/backends"
    repo_agent_directory: str = "/opt/tritonserver/repoagents"
    backend_configuration: dict[str, dict[str, str]] = field(default_factory=dict)
    host_policies: dict[str, dict[str, str]] = field(default_factory=dict)
    metrics_configuration: dict[str, dict[str, str]] = field(default_factory=dict)
    # TRITONSERVER_ServerOptionsSetModelConfigName, tritonserver's --model-config-name.
    model_config_name: str = ""
    # TRITONSERVER_ServerOptionsSetModelLoadDeviceLimit, tritonserver's --model-load-gpu-limit:
    # device id -> fraction of its memory above which loads are refused.
    model_load_gpu_limit: dict[int, float] = field(default_factory=dict)
    # Tritium's own: poll the repository every so many seconds in ModelControlMode.POLL. None,
    # as in Triton's API: only when told (`Server.poll_model_repository()`).
    repository_poll_secs: float | None = None

    def _check_types(self) -> None:
        """TypeError for a value of the wrong type, as Triton's binding raises."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            expected = _SCALAR_TYPES.get(str(f.type))
            if expected is not None and not isinstance(value, expected):
                raise TypeError(f"Options.{f.name} must be {f.type}, got {type(value).__name__}")
        repositories = self.model_repository
        if repositories is None:
            raise InvalidArgumentError("Model repository must be specified.")
        if not isinstance(repositories, list):
            repositories = [repositories]
        for repository in repositories:
            if not isinstance(repository, (str, Path)):
                raise TypeError(
                    f"Options.model_repository must be str or list[str], got "
                    f"{type(repository).__name__}")

    def _log_settings(self) -> LogSettings:
        """Triton cascades the levels: verbose implies info implies warn implies error."""
        info = self.log_info or self.log_verbose > 0
        warn = self.log_warn or info
        error = self.log_error or warn
        log_format = "ISO8601" if self.log_format == LogFormat.ISO8601 else "default"
        return LogSettings(self.log_verbose, info, warn, error, log_format, self.log_file or "")

    def _server_options(self) -> ServerOptions:
        self._check_types()
        if self.metrics_interval <= 0:
            raise InvalidArgumentError(
                f"metrics_interval must be more than 0 milliseconds, got {self.metrics_interval}")
        repository = self.model_repository
        repositories = repository if isinstance(repository, list) else [repository]
        backend_directories = [Path(self.backend_directory)]
        return ServerOptions(
            model_repositories=[repository_location(r) for r in repositories if r is not None],
            backend_directories=[d for d in backend_directories if d.is_dir()],
            repoagent_directory=Path(self.repo_agent_directory),
            backend_config={name: dict(settings)
                            for name, settings in self.backend_configuration.items()},
            model_control_mode=CONTROL_MODE_NAMES[ModelControlMode(self.model_control_mode)],
            load_models=list(self.startup_models),
            # The core polls in POLL mode; asked for no period, it waits as long as a wait can.
            repository_poll_secs=self.repository_poll_secs or threading.TIMEOUT_MAX,
            strict_readiness=self.strict_readiness,
            exit_on_error=self.exit_on_error,
            auto_complete=not self.strict_model_config,
            model_load_thread_count=self.model_load_thread_count,
            exit_timeout_secs=float(self.exit_timeout),
            server_id=self.server_id,
            log_settings=self._log_settings(),
            cache_config={name: {k: str(v) for k, v in settings.items()}
                          for name, settings in self.cache_config.items()},
            rate_limit=RATE_LIMIT_NAMES[RateLimitMode(self.rate_limiter_mode)],
            rate_limit_resources=[(r.name, r.count, r.device)
                                  for r in self.rate_limiter_resources],
            min_supported_compute_capability=self.min_supported_compute_capability,
            model_config_name=self.model_config_name,
            model_load_retry_count=self.model_load_retry_count,
            model_load_gpu_limit=dict(self.model_load_gpu_limit),
            model_namespacing=self.model_namespacing,
        )


class ModelDictionary(dict):
    """`Server.models()`: (name, version) -> Model; indexing by name alone gives the model
    with version -1 (the version policy's choice)."""

    def __init__(self, server: Server, models: list[Model]) -> None:
        super().__init__()
        for model in models:
            self[(model.name, model.version)] = model
        self._server = server
        self._names = {name for name, _ in self.keys()}

    def __getitem__(self, key: Any) -> Model:
        if isinstance(key, tuple):
            try:
                return dict.__getitem__(self, key)
            except KeyError:
                raise KeyError(f"Unknown Model: {key}") from None
        if key in self._names:
            return Model(self._server, name=key, version=-1)
        raise KeyError(f"Unknown Model: {key}")


_UNLOADED_STATES = (None, "UNAVAILABLE")


class Server:
    """An in-process Triton server: `Server(model_repository=...).start()`."""

    def __init__(self, options: Options | None = None, **kwargs: Any) -> None:
        self.options: Options = options if options is not None else Options(**kwargs)
        self._core: InferenceServer | None = None
        # Frontends serving this server (start_frontends, tritonfrontend's services).
        self._frontends: list[Frontends] = []
        self._log_handler: logging.Handler | None = None
        self._log_level: int | None = None
        # What metrics() serves, its GPU and CPU figures polled while started.
        self._metrics: PolledMetrics | None = None

    # -- life ----------------------------------------------------------------------------------

    def start(self, wait_until_ready: bool = False, polling_interval: float = 0.1,
              timeout: float | None = None) -> Server:
        """Create the core and load the models; raises Triton's errors (a model that fails
        to load with exit_on_error: InternalError)."""
        if self._core is not None:
            raise InvalidArgumentError("Server already started")
        options = self.options._server_options()
        self._install_logging(options.log_settings)
        try:
            core = InferenceServer(options)
        except CoreError as exc:
            self._remove_logging()
            raise api_error(exc) from None
        try:
            try:
                core.repository.check_repositories()
            except CoreError as exc:
                # Triton's file system layer reports a missing repository as INTERNAL.
                raise InternalError(exc.message) from None
            core.start()
        except CoreError as exc:
            core.shutdown()
            self._remove_logging()
            raise api_error(exc) from None
        self._core = core
        log_tables(core, log)
        if self.options.metrics:
            self._metrics = PolledMetrics(
                core, self.options.metrics_interval / 1000, gpu=self.options.gpu_metrics,
                cpu=self.options.cpu_metrics,
                pinned_pool_bytes=self.options.pinned_memory_pool_size)
            self._metrics.start()
        started = time.monotonic()
        while wait_until_ready and not self.ready():
            if timeout is not None and time.monotonic() - started >= timeout:
                raise UnavailableError("Timeout before ready")
            time.sleep(polling_interval)
        return self

    def stop(self) -> None:
        """Stop the frontends (if started), wait for requests in flight (up to exit_timeout),
        unload every model and finalize the backends; InternalError if they were not all
        unloaded by then (Triton's "Exit timeout expired"), what runs on being left behind."""
        core = self._started()
        running, self._frontends = self._frontends, []
        for frontends in running:
            frontends.stop(float(self.options.exit_timeout))
        metrics, self._metrics = self._metrics, None
        if metrics is not None:
            metrics.stop()
        self._core = None
        try:
            core.shutdown()
        except CoreError as exc:  # INTERNAL "Exit timeout expired. Exiting immediately."
            raise api_error(exc) from None
        finally:
            self._remove_logging()

    def __enter__(self) -> Server:
        return self if self._core is not None else self.start(wait_until_ready=True)

    def __exit__(self, *exc_info: object) -> None:
        if self._core is not None:
            self.stop()

    def _started(self) -> InferenceServer:
        if self._core is None:
            raise InvalidArgumentError("Server not started")
        return self._core

    def _install_logging(self, settings: LogSettings) -> None:
        """Log the core's records as the options say, without touching the process's other
        logging (a Python program owns its root logger; Tritium's records still propagate)."""
        if not (settings.log_error or settings.log_file):
            # Logging off, as Triton's defaults say: no last-resort printing to stderr either
            # (records still reach handlers the program installed).
            handler: logging.Handler = logging.NullHandler()
            logging.getLogger("tritium").addHandler(handler)
            self._log_handler = handler
            return
        handler = (logging.FileHandler(settings.log_file, encoding="utf-8") if settings.log_file
                   else logging.StreamHandler())
        handler.setFormatter(TritonFormatter(settings))
        handler.addFilter(settings)
        logger = logging.getLogger("tritium")
        logger.addHandler(handler)
        # The handler's filter applies the options; the logger must let the records through.
        self._log_level = logger.level
        logger.setLevel(logging.DEBUG if settings.log_verbose_level > 0 else logging.INFO)
        self._log_handler = handler

    def _remove_logging(self) -> None:
        handler, self._log_handler = self._log_handler, None
        if handler is not None:
            logger = logging.getLogger("tritium")
            logger.removeHandler(handler)
            handler.close()
            if self._log_level is not None:
                logger.setLevel(self._log_level)
                self._log_level = None

    # -- health and metadata -----------------------------------------------------------------

    def live(self) -> bool:
        return self._started().is_live()

    def ready(self) -> bool:
        return self._started().is_ready()

    def metadata(self) -> dict[str, Any]:
        return self._started().metadata()

    def metrics(self, metric_format: MetricFormat = MetricFormat.PROMETHEUS) -> str:
        self._started()
        if self._metrics is None:
            raise UnavailableError("metrics not enabled")
        if metric_format != MetricFormat.PROMETHEUS:
            raise InvalidArgumentError(f"unsupported metric format {metric_format}")
        return self._metrics.text()

    # -- models ------------------------------------------------------------------------------

    def model(self, model_name: str, model_version: int = -1) -> Model:
        return Model(self, model_name, model_version)

    def models(self, exclude_not_ready: bool = False) -> ModelDictionary:
        entries = self._started().repository_index(exclude_not_ready)
        models = [Model(self, entry["name"], int(entry.get("version", -1)),
                        entry.get("state"), entry.get("reason")) for entry in entries]
        return ModelDictionary(self, models)

    def load(self, model_name: str, parameters: dict[str, Any] | None = None, *,
             config: str | dict[str, Any] | None = None,
             files: dict[str, bytes] | None = None) -> Model:
        """Load (or reload) a model and wait until it settles (ModelControlMode.EXPLICIT).

        `parameters` as Triton's API takes them ({"config": JSON text, "file:1/model.py":
        bytes}); or `config` (JSON text or a dict) and `files` ({"1/model.py": bytes}).
        """
        core = self._started()
        merged: dict[str, Any] = dict(parameters or {})
        if config is not None:
            merged["config"] = config if isinstance(config, str) else json.dumps(config)
        for path, content in (files or {}).items():
            merged[f"file:{path}"] = content
        for key, value in merged.items():
            if key == "config" and not isinstance(value, str):
                raise InvalidArgumentError("load parameter 'config' must be JSON text")
            if key.startswith("file:") and not isinstance(value, (bytes, bytearray)):
                raise InvalidArgumentError(f"load parameter '{key}' must be bytes")
        try:
            core.load_model(model_name, merged)
        except CoreError as exc:
            raise api_error(exc) from None
        return self.model(model_name)

    def poll_model_repository(self) -> None:
        """Apply the repository's changes: load new and changed models, unload removed ones
        (ModelControlMode.POLL only)."""
        core = self._started()
        if self.options.model_control_mode != ModelControlMode.POLL:
            raise UnavailableError("polling is disabled")
        try:
            core.control.poll()
        except CoreError as exc:
            raise api_error(exc) from None

    def register_model_repository(
            self, repository_path: str,
            name_mapping: dict[str, str] | list[tuple[str, str]] | None = None) -> None:
        """Add a model repository (ModelControlMode.EXPLICIT); `name_mapping` gives some of
        its model directories other names ({directory: model name}; (directory, name) pairs
        give one directory several names, as the C API may)."""
        try:
            self._started().register_model_repository(repository_path, name_mapping)
        except CoreError as exc:
            raise api_error(exc) from None

    def unregister_model_repository(self, repository_path: str) -> None:
        """Remove a model repository; the models it loaded stay loaded."""
        try:
            self._started().unregister_model_repository(repository_path)
        except CoreError as exc:
            raise api_error(exc) from None

    def unload(self, model: str | Model, unload_dependents: bool = False,
               wait_until_unloaded: bool = False, polling_interval: float = 0.1,
               timeout: float | None = None) -> None:
        core = self._started()
        name = model if isinstance(model, str) else model.name
        try:
            core.unload_model(name, unload_dependents)
        except CoreError as exc:
            raise api_error(exc) from None
        started = time.monotonic()
        while wait_until_unloaded and not self._unloaded(name):
            if timeout is not None and time.monotonic() - started >= timeout:
                return
            time.sleep(polling_interval)

    def _unloaded(self, name: str) -> bool:
        return all(model.state in _UNLOADED_STATES
                   for (model_name, _), model in self.models().items() if model_name == name)

    # -- frontends -----------------------------------------------------------------------------

    def start_frontends(self, http_port: int | None = 0, grpc_port: int | None = 0,
                        metrics_port: int | None = None,
                        address: str = "127.0.0.1") -> FrontendAddresses:
        """Serve this server over HTTP/gRPC (and metrics) too; port 0 picks a free port, None
        leaves that frontend off. Returns the bound "host:port" addresses."""
        return self._serve(address, http_port, grpc_port, metrics_port)[1]

    def _serve(self, address: str, http_port: int | None, grpc_port: int | None,
               metrics_port: int | None,
               header_forward: dict[str, HeaderPattern] | None = None,
               grpc_settings: dict[str, Any] | None = None,
               ) -> tuple[Frontends, FrontendAddresses]:
        frontends = self._frontends_of_this()
        frontends.header_forward = header_forward or {}
        frontends.grpc_settings = grpc_settings or {}
        addresses = frontends.start(address, http_port, grpc_port, metrics_port)
        self._frontends.append(frontends)
        return frontends, addresses

    def _serve_built(self, build: Callable[[InferenceServer], list[tuple[str, Any]]]
                     ) -> FrontendAddresses:
        """Serve over frontends `build(core)` makes (`tritium serve`'s, from its flags:
        tritium.inprocess.pytriton); stopped with the server."""
        frontends = self._frontends_of_this()
        addresses = frontends.start_built(build(self._started()))
        self._frontends.append(frontends)
        return addresses

    def _frontends_of_this(self) -> Frontends:
        return Frontends(self._started(), {
            "interval_ms": float(self.options.metrics_interval),
            "allow_cpu_metrics": self.options.cpu_metrics,
            "allow_gpu_metrics": self.options.gpu_metrics,
            "pinned_pool_bytes": self.options.pinned_memory_pool_size})

    def _stop_serving(self, frontends: Frontends) -> None:
        if frontends in self._frontends:
            self._frontends.remove(frontends)
            frontends.stop(float(self.options.exit_timeout))
