"""InstancePlacement: where a model's instances run, when not in this server's process.

Triton runs every instance of a model on the server's own machine; Tritium can place them
elsewhere (a Ray cluster, `tritium serve --ray-address`, see `tritium.ray`). The model asks the
placement, once per instance group, for the backend library that group's instances run with:
the backend's own (local), or one whose instance entry points run remotely. Everything in
front of the instance (schedulers, statistics, the model's life cycle) stays the same.

Its own module so that the backend manager (which holds the placement) and a placement (which
wraps a backend's library) do not import each other.
"""

from __future__ import annotations

from typing import Protocol

from tritonclient.grpc import model_config_pb2 as mc

from .api import BackendLibrary
from .handles import Model


class InstancePlacement(Protocol):
    """Chooses the library each instance group of a model runs with."""

    def library(self, model: Model, group: mc.ModelInstanceGroup, backend_name: str,
                local: BackendLibrary) -> BackendLibrary:
        """The library `group`'s instances run with: `local` (the backend `backend_name`'s
        own, in this process) or one that runs them elsewhere."""

    def close(self) -> None:
        """After every model is unloaded: release what the placement holds."""
