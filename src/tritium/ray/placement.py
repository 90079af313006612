"""RayPlacement: the InstancePlacement of a server started with `--ray-address`.

Imported only when the flag is given: a server without it never imports Ray. For an instance
group whose configuration asks for Ray (`options.py`) it gives a backend library whose
instance entry points run on the cluster (`remote_instance.py`); for any other group, the
backend's own.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tritonclient.grpc import model_config_pb2 as mc

from ..backend.api import BackendLibrary
from ..backend.handles import Model as ModelHandle
from ..backend.handles import ModelInstance as InstanceHandle
from ..backend.server_api import ServerApi
from ..request import InferenceRequest
from .cluster import RayCluster
from .instance_actor import InstanceSpec
from .options import group_options, instance_options
from .remote_instance import RayInstance


class RayPlacement:
    def __init__(self, address: str, server: ServerApi, server_id: str,
                 backend_directories: Sequence[Path],
                 backend_config: dict[str, dict[str, str]]) -> None:
        self.cluster = RayCluster(address, server, server_id)
        # What an actor needs to find the backend as this server does.
        self._backend_directories = [str(Path(d).resolve()) for d in backend_directories]
        self._backend_config = backend_config

    def library(self, model: ModelHandle, group: mc.ModelInstanceGroup, backend_name: str,
                local: BackendLibrary) -> BackendLibrary:
        """The library `group`'s instances run with: on Ray when the model asks for it."""
        options = group_options(model.config, group)
        if options is None:
            return local
        return BackendLibrary(f"{backend_name} on Ray",
                              _RayInstances(self, backend_name, options), origin="ray")

    def spec(self, handle: InstanceHandle, backend_name: str) -> InstanceSpec:
        model = handle.model
        return InstanceSpec(
            model=model.name,
            backend=backend_name,
            backend_directories=self._backend_directories,
            backend_config=self._backend_config,
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
        self.cluster.close()


class _RayInstances:
    """The instance entry points of a backend whose instances run on Ray (one per group)."""

    def __init__(self, placement: RayPlacement, backend_name: str,
                 options: dict[str, Any]) -> None:
        self._placement = placement
        self._backend_name = backend_name
        self._options = options

    def model_instance_initialize(self, instance: InstanceHandle) -> None:
        remote = RayInstance(self._placement.cluster, instance,
                             instance_options(instance.kind, self._options),
                             self._placement.spec(instance, self._backend_name))
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
