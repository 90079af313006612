"""What a backend may ask of the server: ServerApi (the TRITONSERVER_* calls a backend can
make), held by every model handle as `model.server`.

Its own module so that the handles (which hold it) and the entry points (which take the
handles) do not import each other.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..custom_metrics import MetricRegistry
from ..errors import TritonError
from ..request import Deliver, InferenceRequest


class ServerApi(Protocol):
    """What a backend may ask of the server (the TRITONSERVER_* API a backend can call).

    `model.server` holds it. Python-backend BLS, `pb_utils.is_model_ready`/`load_model`/
    `unload_model` and custom metrics go through here, never through the server's internals.
    """

    metrics: MetricRegistry

    def infer_async(self, request: InferenceRequest, deliver: Deliver) -> None:
        """TRITONSERVER_ServerInferAsync: route `request`; responses reach `deliver` from any
        thread. Raises TritonError when the request cannot be routed or is invalid."""

    def model_ready(self, name: str, version: int = -1) -> bool:
        """TRITONSERVER_ServerModelIsReady."""

    def load_model(self, name: str, parameters: dict[str, Any] | None = None) -> None:
        """TRITONSERVER_ServerLoadModelWithParameters: `config` (JSON text) and
        `file:<version>/<path>` (bytes) parameters, as a load request's."""

    def unload_model(self, name: str, unload_dependents: bool = False) -> None:
        """TRITONSERVER_ServerUnloadModel(AndDependents)."""


class NoServer:
    """The ServerApi of a BackendManager made without a server (unit tests that load models
    alone): a backend that asks for another model gets UNAVAILABLE, its metrics go nowhere."""

    def __init__(self) -> None:
        self.metrics = MetricRegistry()

    def infer_async(self, request: InferenceRequest, deliver: Deliver) -> None:
        raise TritonError.unavailable(f"no server to run model '{request.model_name}' on")

    def model_ready(self, name: str, version: int = -1) -> bool:
        return False

    def load_model(self, name: str, parameters: dict[str, Any] | None = None) -> None:
        raise TritonError.unavailable(f"no server to load model '{name}' on")

    def unload_model(self, name: str, unload_dependents: bool = False) -> None:
        raise TritonError.unavailable(f"no server to unload model '{name}' from")
