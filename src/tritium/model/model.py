"""TritonModel: one loaded version of a backend's model, with its instances (Triton's
TritonModel).

`TritonModel.load` is Triton's TritonModel::Create: acquire the backend, let the backend
initialise (and possibly auto-complete) the model, normalise instance groups with the backend's
preferred groups, re-validate, load the model's custom batching strategy if it names one
(`batch_strategy`), create one instance per instance-group count, then build the scheduler.
`unload` undoes it in reverse, after the requests in flight have finished. Taking requests is
every loaded model's (`loaded_model.LoadedModel`); an ensemble is an EnsembleModel
instead, which the life cycle picks.

`update_instance_groups` is Triton's TritonModel::UpdateInstanceGroup, for a reload that
changes nothing but the instance groups: every requested instance whose signature (its group
but for name and count, and its device) matches a current instance reuses it; the others are
created and initialized while the current ones go on serving; the scheduler then takes the new
ones and lets the left-over ones go, and those are finalized.
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
from ..errors import TritonError
from ..gpus import NO_GPUS, GpuInventory
from ..response_cache import ResponseCache
from ..scheduler import ExecutionInstance, InstanceScheduler, create_scheduler
from ..scheduler.rate_limiter import RateLimiter
from ..statistics import ModelStatistics
from .batch_strategy import LoadedStrategy, load_batch_strategy
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
        # A backend's model's scheduler runs on its instances (an update changes them).
        self.scheduler: InstanceScheduler | None = None
        # The custom batching strategy the dynamic batcher consults (None: Triton's batching).
        self._strategy: LoadedStrategy | None = None
        self._gpus = NO_GPUS
        self._rate_limiter: RateLimiter | None = None
        # Instances an update removed that a sequence batcher still runs sequences on.
        self._draining: list[TritonModelInstance] = []
        self._draining_lock = threading.Lock()

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
        config_provided: bool = True,
        gpus: GpuInventory = NO_GPUS,
        response_cache: ResponseCache | None = None,
        rate_limiter: RateLimiter | None = None,
    ) -> TritonModel:
        check_model_paths(config, model_path, version, backends.directories)
        loaded = backends.acquire(config.backend, model_path, version, runtime=config.runtime,
                                  model_name=config.name)
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
            if not config_provided and not handle.config_set:
                raise TritonError.not_found(
                    f"model configuration is not provided for model '{handle.name}'")
        except BaseException:
            backends.release(loaded)
            raise
        model = cls(backends, loaded, handle, statistics)
        model._gpus = gpus
        model._rate_limiter = rate_limiter
        try:
            model._complete_config(loaded, gpus)
            model.labels = read_labels(model.config, model_path)
            model._strategy = load_batch_strategy(model.handle, backends.directories)
            model.instances = model._create_instances(_requested(model.config))
            scheduler = create_scheduler(
                model.config, _scheduled(model.instances), loaded.handle.execution_policy,
                model._strategy,
            )
            model.scheduler = scheduler
            scheduler.start()
            model.use_response_cache(response_cache)
        except BaseException:
            model._teardown()
            raise
        return model

    def update_instance_groups(self, config: mc.ModelConfig) -> None:
        """Serve with `config`'s instance groups (the rest of `config` is the model's own);
        raises TritonError, the model serving as before, if they are invalid or an instance
        fails to initialize."""
        updated = _copy(self.handle.config)
        updated.ClearField("instance_group")
        updated.instance_group.extend(config.instance_group)
        normalize_instance_groups(updated, self._backend.attributes.preferred_groups,
                                  self._gpus.supported_ids)
        validate_instance_groups(updated, gpus=self._gpus.supported_ids,
                                 min_compute_capability=self._gpus.min_compute_capability)
        current: dict[tuple[bytes, int], list[TritonModelInstance]] = {}
        for instance in self.instances:
            current.setdefault(_signature(instance.handle.group, instance.handle.device_id),
                               []).append(instance)
        kept: list[TritonModelInstance] = []
        wanted: list[_Requested] = []
        for request in _requested(updated):
            reusable = current.get(_signature(request[0], request[1]))
            if reusable:
                instance = reusable.pop()
                log.debug("Re-using model instance named '%s' with device id '%d'",
                          instance.name, instance.handle.device_id)
                kept.append(instance)
            else:
                wanted.append(request)
        added = self._create_instances(wanted)
        removed = [instance for left in current.values() for instance in left]
        scheduler = self.scheduler
        assert scheduler is not None
        with self._draining_lock:
            self._draining += removed
        scheduler.update_instances(_scheduled(added), _scheduled(removed), self._release)
        for instance in removed:
            if instance.handle.is_passive:  # never scheduled: nothing runs on it
                self._release(instance)
        self.instances = kept + added
        self.handle._replace_config(updated)

    def _release(self, instance: ExecutionInstance) -> None:
        """The scheduler let a removed instance go: finalize it (once, whoever comes first:
        this or the unload)."""
        assert isinstance(instance, TritonModelInstance)
        with self._draining_lock:
            if instance not in self._draining:
                return
            self._draining.remove(instance)
        instance.finalize()

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

    def _create_instances(self, requested: list[_Requested]) -> list[TritonModelInstance]:
        """The requested instances, initialized (side by side where the backend allows it);
        if one fails, those made are finalized and the error raised."""
        decoupled = self.decoupled
        # A server connected to Ray (--ray-address) may run a group's instances there.
        placement = self._backends.placement
        gpus = self._gpus
        made: list[TritonModelInstance] = []
        for group, device, index in requested:
            library = (self._backend.library if placement is None
                       else placement.library(self.handle, group, self._backend.handle.name,
                                              self._backend.library))
            kind = mc.ModelInstanceGroup.Kind.Name(group.kind)
            gpu = group.kind == mc.ModelInstanceGroup.KIND_GPU
            try:
                if gpu:
                    gpus.check_load_limit(device)
                # Triton's TritonModelInstance name: "<group>_<index>", even alone.
                handle = InstanceHandle(self.handle, f"{group.name}_{index}", kind, device, group,
                                        self.statistics)
                made.append(TritonModelInstance(
                    handle, library, self.statistics, decoupled, self._rate_limiter,
                    gpu=device if gpu and library is self._backend.library else -1,
                ))
            except BaseException:
                _finalize_all(made)
                raise
        errors: list[BaseException] = []
        if self._backend.attributes.parallel_instance_loading and len(made) > 1:
            threads = [threading.Thread(target=_collect(errors, i.initialize)) for i in made]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        else:
            for instance in made:
                _collect(errors, instance.initialize)()
                if errors:
                    break
        if errors:
            _finalize_all(made)
            raise errors[0]
        for instance in made:
            log.debug("Created model instance named '%s' with device id '%d'", instance.name,
                      instance.handle.device_id)
        return made

    def _teardown(self) -> None:
        super()._teardown()
        with self._draining_lock:
            draining, self._draining = self._draining, []
        for instance in self.instances + draining:
            instance.finalize()
        self.instances.clear()
        if self._strategy is not None:
            self._strategy.close()
            self._strategy = None
        try:
            self._backend.library.model_finalize(self.handle)
        except Exception:
            log.exception("model '%s' failed to finalize", self.name)
        self._backends.release(self._backend)



# One requested instance: its group, device and index in the group.
_Requested = tuple[mc.ModelInstanceGroup, int, int]


def _requested(config: mc.ModelConfig) -> list[_Requested]:
    """Every instance the (normalized) instance groups ask for, in order."""
    return [
        (group, device, index)
        for group in config.instance_group
        for device in (group.gpus if group.kind == mc.ModelInstanceGroup.KIND_GPU else [0])
        for index in range(group.count)
    ]


def _signature(group: mc.ModelInstanceGroup, device: int) -> tuple[bytes, int]:
    """Triton's instance signature: two instances are alike when their groups are, but for
    name and count, and so are their devices."""
    alike = mc.ModelInstanceGroup()
    alike.CopyFrom(group)
    alike.ClearField("name")
    alike.ClearField("count")
    return alike.SerializeToString(deterministic=True), device


def _scheduled(instances: list[TritonModelInstance]) -> list[TritonModelInstance]:
    """The instances a scheduler runs requests on: not the passive ones, which Triton creates
    and initializes but never schedules (their backend drives them)."""
    return [instance for instance in instances if not instance.handle.is_passive]


def _finalize_all(instances: list[TritonModelInstance]) -> None:
    """Undo the instances made for a load or update that failed (initialized or not, as
    Triton's instances are destroyed either way)."""
    for instance in instances:
        instance.finalize()


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
