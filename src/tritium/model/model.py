"""TritonModel: one loaded version of a model, with its instances, scheduler and statistics.

`TritonModel.load` is Triton's TritonModel::Create: acquire the backend, normalise instance
groups with the backend's preferred groups, let the backend initialise (and possibly auto-complete) the model,
re-validate, create one instance per instance-group count, then build the scheduler. `unload`
undoes it in reverse, after the requests in flight have finished.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from time import perf_counter_ns
from typing import Callable

from tritonclient.grpc import model_config_pb2 as mc

from ..backend.handles import Model as ModelHandle
from ..backend.handles import ModelInstance as InstanceHandle
from ..backend.manager import BackendManager, LoadedBackend
from ..config import (
    ENSEMBLE_PLATFORM,
    normalize_instance_groups,
    normalize_model_config,
    validate_instance_groups,
    validate_model_config,
    validate_model_io_config,
)
from ..errors import Code, TritonError
from ..request import (
    RESPONSE_COMPLETE_FINAL,
    Deliver,
    InferenceRequest,
    InferenceResponse,
    ResponseSender,
)
from ..response_cache import ModelResponseCache, ResponseCache
from ..scheduler import Scheduler, create_scheduler
from ..scheduler.rate_limiter import RateLimiter
from .instance import TritonModelInstance
from .labels import read_labels
from .request_normalizer import RequestSpec, normalize_request
from .statistics import ModelStatistics

log = logging.getLogger("tritium.model")


class ModelRetired(TritonError):
    """Raised by `TritonModel.submit` once the version is being unloaded or replaced.

    The server then routes the request again, to the version that replaced it (a reload), so
    a request that raced a swap is never lost.
    """

    def __init__(self, name: str, version: int) -> None:
        super().__init__(
            Code.UNAVAILABLE,
            f"Request for unknown model: '{name}' version {version} is not at ready state",
        )


class TritonModel:
    def __init__(
        self,
        backends: BackendManager,
        loaded_backend: LoadedBackend,
        handle: ModelHandle,
        statistics: ModelStatistics,
    ) -> None:
        self._backends = backends
        self._backend = loaded_backend
        self.handle = handle
        self.name = handle.name
        self.version = handle.version
        self.statistics = statistics
        self.instances: list[TritonModelInstance] = []
        self.scheduler: Scheduler | None = None
        # Output name -> labels (label_filename), for classification.
        self.labels: dict[str, list[str]] = {}
        self._version_text = str(handle.version)
        # What normalize_request reads from the configuration (built once it is final).
        self._spec: RequestSpec | None = None
        self._cache: ModelResponseCache | None = None
        self._inflight = 0
        self._waiters = 0
        self._retired = False
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)

    @property
    def config(self) -> mc.ModelConfig:
        return self.handle.config

    def is_ready(self) -> bool:
        """Every instance can serve (backends report it through model_instance_ready)."""
        return all(instance.is_ready() for instance in self.instances)

    @property
    def decoupled(self) -> bool:
        return self.config.model_transaction_policy.decoupled

    @classmethod
    def load(
        cls,
        config: mc.ModelConfig,
        version: int,
        model_path: Path,
        backends: BackendManager,
        *,
        auto_complete: bool,
        gpu_count: int = 0,
        response_cache: ResponseCache | None = None,
        rate_limiter: RateLimiter | None = None,
    ) -> "TritonModel":
        if config.platform == ENSEMBLE_PLATFORM:
            # Imported here: the ensemble module builds on this one and on the repository.
            from .ensemble import EnsembleModel

            return EnsembleModel.load_ensemble(config, version, model_path, backends.server)
        loaded = backends.acquire(config.backend)
        try:
            handle = ModelHandle(
                loaded.handle,
                _copy(config),
                version,
                model_path,
                auto_complete=auto_complete,
                server=backends.server,  # type: ignore[arg-type]
            )
            loaded.library.model_initialize(handle)
            handle._finish_initialization()
        except BaseException:
            backends.release(loaded)
            raise
        model = cls(backends, loaded, handle, ModelStatistics(config.name, str(version)))
        try:
            model._complete_config(loaded, gpu_count)
            model.labels = read_labels(model.config, model_path)
            model._create_instances(parallel=loaded.attributes.parallel_instance_loading,
                                    rate_limiter=rate_limiter)
            model.scheduler = create_scheduler(
                model.config, model.instances, loaded.handle.execution_policy
            )
            model.scheduler.start()
            model._cache = model_response_cache(response_cache, model)
        except BaseException:
            model._teardown()
            raise
        return model

    def _complete_config(self, loaded: LoadedBackend, gpu_count: int) -> None:
        """After the backend's model_initialize (which may have auto-completed the
        configuration), normalise and validate what instances will be built from."""
        config = _copy(self.handle.config)
        normalize_model_config(config, self.handle.repository_path)
        validate_model_config(config)
        normalize_instance_groups(config, loaded.attributes.preferred_groups, gpu_count)
        validate_instance_groups(config, gpu_count=gpu_count)
        validate_model_io_config(config)
        self.handle._replace_config(config)

    def _create_instances(self, *, parallel: bool, rate_limiter: RateLimiter | None) -> None:
        decoupled = self.decoupled
        # A server connected to Ray (--ray-address) may run a group's instances there.
        placement = getattr(self._backends.server, "instance_placement", None)
        for group in self.config.instance_group:
            library = (self._backend.library if placement is None
                       else placement.library(self.handle, group, self._backend))
            kind = mc.ModelInstanceGroup.Kind.Name(group.kind)
            devices = list(group.gpus) if group.kind == mc.ModelInstanceGroup.KIND_GPU else [0]
            for device in devices:
                for index in range(group.count):
                    # Triton's TritonModelInstance name: "<group>_<index>", even alone.
                    name = f"{group.name}_{index}"
                    handle = InstanceHandle(self.handle, name, kind, device, group)
                    instance = TritonModelInstance(
                        handle, library, self.statistics, decoupled, rate_limiter
                    )
                    self.instances.append(instance)
        if parallel and len(self.instances) > 1:
            errors: list[BaseException] = []
            threads = [
                threading.Thread(target=_collect(errors, i.initialize)) for i in self.instances
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if errors:
                raise errors[0]
        else:
            for instance in self.instances:
                instance.initialize()

    def submit(self, request: InferenceRequest, deliver: Deliver) -> None:
        """Validate `request` against the configuration and queue it.

        Raises TritonError for a request the model cannot take; otherwise every response,
        including the final one, reaches `deliver` (from an instance thread).
        """
        # The slot is taken first, so that `retire` then `wait_idle` can never miss a request.
        with self._lock:
            if self._retired:
                raise ModelRetired(self.name, self.version)
            self._inflight += 1
        spec = self._spec
        if spec is None:
            spec = self._spec = RequestSpec(self.config)
        try:
            normalize_request(request, spec)
        except BaseException:
            self._finish_one()
            raise
        scheduler = self.scheduler
        assert scheduler is not None
        name = self.name
        version = self._version_text
        record_request = self.statistics.record_request
        finish_one = self._finish_one
        failed = False

        def on_response(response: InferenceResponse | None, flags: int) -> None:
            nonlocal failed
            if response is not None:
                response.model_name = name
                response.model_version = version
                response.id = request.id
                if response.error is not None:
                    failed = True
            if flags & RESPONSE_COMPLETE_FINAL:
                record_request(request, not failed)
                finish_one()
            deliver(response, flags)

        request.response_sender = ResponseSender(on_response)
        request.queue_start_ns = perf_counter_ns()
        if self._cache is not None and self._cache.serve(request):
            return
        try:
            scheduler.enqueue(request)
        except BaseException:
            # Refused by the scheduler (e.g. a sequence never started): no response will come.
            request.response_sender = None
            finish_one()
            raise

    def _finish_one(self) -> None:
        with self._lock:
            self._inflight -= 1
            if self._inflight == 0 and self._waiters:
                self._idle.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no request is in flight; False if `timeout` passed first."""
        with self._idle:
            self._waiters += 1
            try:
                return self._idle.wait_for(lambda: self._inflight == 0, timeout)
            finally:
                self._waiters -= 1

    @property
    def inflight(self) -> int:
        return self._inflight

    def retire(self) -> None:
        """Take no new request (they get ModelRetired); those already in flight go on."""
        with self._lock:
            self._retired = True

    def unload(self, timeout: float | None = None) -> None:
        """Finish in-flight requests (up to `timeout`), then finalize instances and model."""
        self.retire()
        if not self.wait_idle(timeout):
            log.warning(
                "model '%s' version %d unloading with %d request(s) still in flight",
                self.name,
                self.version,
                self._inflight,
            )
        self._teardown()

    def _teardown(self) -> None:
        if self.scheduler is not None:
            self.scheduler.stop()
            self.scheduler = None
        for instance in self.instances:
            instance.finalize()
        self.instances.clear()
        try:
            self._backend.library.model_finalize(self.handle)
        except Exception:
            log.exception("model '%s' failed to finalize", self.name)
        self._backends.release(self._backend)


def model_response_cache(
    cache: ResponseCache | None, model: TritonModel
) -> ModelResponseCache | None:
    """The model's use of the server's cache, if both enable it (Triton never caches for
    decoupled or sequence models; the configuration check refuses those)."""
    config = model.config
    if cache is None or not config.response_cache.enable or model.decoupled \
            or config.HasField("sequence_batching"):
        return None
    return ModelResponseCache(cache, model.name, model._version_text,
                              [o.name for o in config.output], model.statistics)


def _copy(config: mc.ModelConfig) -> mc.ModelConfig:
    out = mc.ModelConfig()
    out.CopyFrom(config)
    return out


def _collect(errors: list[BaseException], fn: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        try:
            fn()
        except BaseException as exc:  # reported by the loading thread
            errors.append(exc)

    return run
