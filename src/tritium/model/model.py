"""TritonModel: one loaded version of a backend's model, with its instances (Triton's
TritonModel).

`TritonModel.load` is Triton's TritonModel::Create: acquire the backend, let the backend
initialise (and possibly auto-complete) the model, normalise instance groups with the backend's
preferred groups, re-validate, create one instance per instance-group count, then build the
scheduler. `unload` undoes it in reverse, after the requests in flight have finished. Taking
requests is every loaded model's (`loaded_model.LoadedModel`); an ensemble is an EnsembleModel
instead, which the life cycle picks.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from tritonclient.grpc import model_config_pb2 as mc

from ..backend.handles import Model as ModelHandle
from ..backend.handles import ModelInstance as InstanceHandle
from ..backend.manager import BackendManager, LoadedBackend
from ..config import (
    normalize_instance_groups,
    normalize_model_config,
    validate_instance_groups,
    validate_model_config,
    validate_model_io_config,
)
from ..config.model_paths import check_model_paths
from ..gpus import NO_GPUS, GpuInventory
from ..response_cache import ModelResponseCache, ResponseCache
from ..scheduler import create_scheduler
from ..scheduler.rate_limiter import RateLimiter
from ..statistics import ModelStatistics
from .instance import TritonModelInstance
from .labels import read_labels
from .loaded_model import LoadedModel

log = logging.getLogger("tritium.model")


class TritonModel(LoadedModel):
    def __init__(
        self,
        backends: BackendManager,
        loaded_backend: LoadedBackend,
        handle: ModelHandle,
        statistics: ModelStatistics,
    ) -> None:
        super().__init__(handle.name, handle.version, handle.repository_path, statistics)
        self._backends = backends
        self._backend = loaded_backend
        self.handle = handle
        self.instances: list[TritonModelInstance] = []

    @property
    def config(self) -> mc.ModelConfig:
        return self.handle.config

    def is_ready(self) -> bool:
        """Every instance can serve (backends report it through model_instance_ready)."""
        return all(instance.is_ready() for instance in self.instances)

    @classmethod
    def load(
        cls,
        config: mc.ModelConfig,
        version: int,
        model_path: Path,
        backends: BackendManager,
        *,
        auto_complete: bool,
        gpus: GpuInventory = NO_GPUS,
        response_cache: ResponseCache | None = None,
        rate_limiter: RateLimiter | None = None,
    ) -> TritonModel:
        check_model_paths(config, model_path, version, backends.directories)
        loaded = backends.acquire(config.backend, model_path, version)
        statistics = ModelStatistics(config.name, str(version))
        try:
            handle = ModelHandle(
                loaded.handle,
                _copy(config),
                version,
                model_path,
                auto_complete=auto_complete,
                server=backends.server,
                statistics=statistics,
            )
            loaded.library.model_initialize(handle)
            handle._finish_initialization()
        except BaseException:
            backends.release(loaded)
            raise
        model = cls(backends, loaded, handle, statistics)
        try:
            model._complete_config(loaded, gpus)
            model.labels = read_labels(model.config, model_path)
            model._create_instances(parallel=loaded.attributes.parallel_instance_loading,
                                    rate_limiter=rate_limiter, gpus=gpus)
            model.scheduler = create_scheduler(
                model.config, model.instances, loaded.handle.execution_policy
            )
            model.scheduler.start()
            model._cache = model_response_cache(response_cache, model)
        except BaseException:
            model._teardown()
            raise
        return model

    def _complete_config(self, loaded: LoadedBackend, gpus: GpuInventory) -> None:
        """After the backend's model_initialize (which may have auto-completed the
        configuration), normalise and validate what instances will be built from."""
        config = _copy(self.handle.config)
        # The repository's name for the model (a registered name mapping may differ from the
        # directory's name).
        normalize_model_config(config, self.handle.repository_path, model_name=self.name)
        validate_model_config(config)
        normalize_instance_groups(config, loaded.attributes.preferred_groups, gpus.supported_ids)
        validate_instance_groups(config, gpus=gpus.supported_ids,
                                 min_compute_capability=gpus.min_compute_capability)
        validate_model_io_config(config)
        self.handle._replace_config(config)

    def _create_instances(self, *, parallel: bool, rate_limiter: RateLimiter | None,
                          gpus: GpuInventory) -> None:
        decoupled = self.decoupled
        # A server connected to Ray (--ray-address) may run a group's instances there.
        placement = self._backends.placement
        for group in self.config.instance_group:
            library = (self._backend.library if placement is None
                       else placement.library(self.handle, group, self._backend.handle.name,
                                              self._backend.library))
            kind = mc.ModelInstanceGroup.Kind.Name(group.kind)
            devices = list(group.gpus) if group.kind == mc.ModelInstanceGroup.KIND_GPU else [0]
            for device in devices:
                if group.kind == mc.ModelInstanceGroup.KIND_GPU:
                    gpus.check_load_limit(device)
                for index in range(group.count):
                    # Triton's TritonModelInstance name: "<group>_<index>", even alone.
                    name = f"{group.name}_{index}"
                    handle = InstanceHandle(self.handle, name, kind, device, group,
                                            self.statistics)
                    local_gpu = (group.kind == mc.ModelInstanceGroup.KIND_GPU
                                 and library is self._backend.library)
                    instance = TritonModelInstance(
                        handle, library, self.statistics, decoupled, rate_limiter,
                        gpu=device if local_gpu else -1,
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

    def _teardown(self) -> None:
        super()._teardown()
        for instance in self.instances:
            instance.finalize()
        self.instances.clear()
        try:
            self._backend.library.model_finalize(self.handle)
        except Exception:
            log.exception("model '%s' failed to finalize", self.name)
        self._backends.release(self._backend)



def model_response_cache(
    cache: ResponseCache | None, model: LoadedModel
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
