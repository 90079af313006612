"""The server's connection to a Ray cluster (`tritium serve --ray-address ...`).

Imported only when the flag is given: a server without it never imports Ray. The connection
makes this server a Ray driver in namespace `tritium`; its actors are named
`<server id>.<random>/<model>/<version>/<instance>/<serial>` (a serial per actor this
server made: a reload's new instances run beside the old ones until the swap), so several Tritium servers
(one per machine, behind any load balancer) serve the same repository against one cluster
with their own instances, and `ray list actors` shows which is which. When the server exits,
Ray ends its actors with it.

`library(...)` is the model's hook: for an instance group whose configuration asks for Ray
(`options.py`) it gives a backend library whose instance entry points run on the cluster
(`remote_instance.py`); for any other group, the backend's own.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Sequence

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
from tritonclient.grpc import model_config_pb2 as mc

from ..backend.api import BackendLibrary
from ..errors import TritonError
from ..request import InferenceRequest
from .instance_actor import CONCURRENCY_GROUPS, MAX_CONCURRENCY, InstanceActor, InstanceSpec
from .options import group_options
from .owner_calls import SharedFamilies
from .remote_instance import RayInstance

if TYPE_CHECKING:
    from ..backend.handles import Model as ModelHandle
    from ..backend.handles import ModelInstance as InstanceHandle
    from ..backend.manager import LoadedBackend
    from ..server import InferenceServer

log = logging.getLogger("tritium.ray")

NAMESPACE = "tritium"
# How long a new instance may wait for a node with room (and a request for a lost instance's
# replacement) before failing with UNAVAILABLE.
DEFAULT_TIMEOUT_S = 60.0


class RayPlacement:
    def __init__(self, address: str, server: InferenceServer,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        try:
            ray.init(address=address, namespace=NAMESPACE, log_to_driver=True,
                     configure_logging=False)
        except Exception as exc:
            raise TritonError.unavailable(
                f"unable to connect to the Ray cluster at '{address}': {exc}"
            ) from None
        self.server = server
        self.timeout_s = timeout_s
        self.token = f"{server.id}.{uuid.uuid4().hex[:8]}"
        self.families = SharedFamilies(server.metrics)
        self._serials = itertools.count(1)
        # Answers calls from actors that may block (model readiness, loading a model).
        self.pool = ThreadPoolExecutor(8, thread_name_prefix="tritium-ray-calls")
        self._actor_class = ray.remote(
            concurrency_groups=CONCURRENCY_GROUPS, max_concurrency=MAX_CONCURRENCY,
        )(InstanceActor)
        log.info("connected to the Ray cluster at '%s' (%s), actors named '%s/...'", address,
                 ray.get_runtime_context().gcs_address, self.token)

    def library(self, model: ModelHandle, group: mc.ModelInstanceGroup,
                loaded: LoadedBackend) -> BackendLibrary:
        """The library `group`'s instances run with: on Ray when the model asks for it."""
        options = group_options(model.config, group)
        if options is None:
            return loaded.library
        return BackendLibrary(f"{loaded.handle.name} on Ray",
                              _RayInstances(self, loaded, options), origin="ray")

    def new_actor(self, options: dict[str, Any], spec: InstanceSpec) -> Any:
        options = dict(options)
        strategy = options.get("scheduling_strategy")
        if isinstance(strategy, dict):
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(**strategy)
        name = "/".join((self.token, spec.model, str(spec.version),
                         spec.instance_name, str(next(self._serials))))
        return self._actor_class.options(name=name, **options).remote(spec)

    def spec(self, handle: InstanceHandle, loaded: LoadedBackend) -> InstanceSpec:
        model = handle.model
        options = self.server.options
        return InstanceSpec(
            model=model.name,
            backend=loaded.handle.name,
            backend_directories=[str(d.resolve()) for d in options.backend_directories],
            backend_config=options.backend_config,
            config=model.config.SerializeToString(),
            version=model.version,
            repository_path=str(model.repository_path.resolve()),
            instance_name=handle.name,
            kind=handle.kind,
            device_id=handle.device_id,
            group=handle.group.SerializeToString(),
            log_level=logging.getLogger("tritium").getEffectiveLevel(),
        )

    def close(self) -> None:
        """After every model is unloaded: leave the cluster."""
        self.pool.shutdown(wait=False)
        ray.shutdown()


class _RayInstances:
    """The instance entry points of a backend whose instances run on Ray (one per group)."""

    def __init__(self, placement: RayPlacement, loaded: LoadedBackend,
                 options: dict[str, Any]) -> None:
        self._placement = placement
        self._loaded = loaded
        self._options = options

    def model_instance_initialize(self, instance: InstanceHandle) -> None:
        remote = RayInstance(self._placement, instance, self._options,
                             self._placement.spec(instance, self._loaded))
        remote.start()
        instance.state = remote

    def model_instance_execute(self, instance: InstanceHandle,
                               requests: Sequence[InferenceRequest]) -> None:
        instance.state.execute(requests)

    def model_instance_ready(self, instance: InstanceHandle) -> bool:
        remote = instance.state
        return remote is not None and remote.is_ready()

    def model_instance_finalize(self, instance: InstanceHandle) -> None:
        remote, instance.state = instance.state, None
        if remote is not None:
            remote.close()
