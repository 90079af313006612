"""The backend entry points, found by name on a backend module (Triton dlsyms TRITONBACKEND_*).

A backend is any object (usually a module) with some of these callables; only
`model_instance_execute` is required. `BackendLibrary` resolves them once and calls absent
optional ones as no-ops, so the rest of the server never checks `hasattr`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tritonclient.grpc import model_config_pb2 as mc

from ..errors import TritonError
from ..request import InferenceRequest
from .handles import Backend, Model, ModelInstance

# entry point name -> Triton's symbol, for messages and documentation.
ENTRY_POINTS: dict[str, str] = {
    "initialize": "TRITONBACKEND_Initialize",
    "finalize": "TRITONBACKEND_Finalize",
    "get_backend_attribute": "TRITONBACKEND_GetBackendAttribute",
    "model_initialize": "TRITONBACKEND_ModelInitialize",
    "model_finalize": "TRITONBACKEND_ModelFinalize",
    "model_instance_initialize": "TRITONBACKEND_ModelInstanceInitialize",
    "model_instance_finalize": "TRITONBACKEND_ModelInstanceFinalize",
    "model_instance_execute": "TRITONBACKEND_ModelInstanceExecute",
    "model_instance_ready": "TRITONBACKEND_ModelInstanceReady",
}
REQUIRED = ("model_instance_execute",)
# An optional entry point of Tritium's own (no Triton symbol): see BackendLibrary.
EXECUTE_EACH = "model_instance_execute_each"
# A backend attribute of Tritium's own: true when the backend counts its requests and
# executions itself (ModelInstance.report_statistics / report_batch_statistics).
REPORTS_STATISTICS = "REPORTS_STATISTICS"
# A backend attribute of Tritium's own: true when the backend logs its configuration itself,
# as a compiled Triton backend does; for the others the server logs Triton's
# "backend configuration:" record when it initializes them.
LOGS_CONFIGURATION = "LOGS_CONFIGURATION"


@dataclass
class BackendAttributes:
    """TRITONBACKEND_BackendAttribute: what a backend tells the server about itself.

    `preferred_groups` replaces the default instance group of models that configure none;
    `parallel_instance_loading` lets the server initialise a model's instances concurrently.
    """

    preferred_groups: list[mc.ModelInstanceGroup] = field(default_factory=list)
    parallel_instance_loading: bool = False

    def add_preferred_instance_group(self, kind: str, count: int = 0) -> None:
        """TRITONBACKEND_BackendAttributeAddPreferredInstanceGroup."""
        group = mc.ModelInstanceGroup(kind=mc.ModelInstanceGroup.Kind.Value(kind), count=count)
        self.preferred_groups.append(group)

    def set_parallel_model_instance_loading(self, enabled: bool) -> None:
        """TRITONBACKEND_BackendAttributeSetParallelModelInstanceLoading."""
        self.parallel_instance_loading = enabled


def _noop(*_args: Any) -> None:
    return None


def _always_ready(_instance: ModelInstance) -> bool:
    return True


class BackendLibrary:
    """The resolved entry points of one backend implementation (a module or object)."""

    def __init__(self, name: str, implementation: Any, origin: str) -> None:
        self.name = name
        self.origin = origin
        missing = [n for n in REQUIRED if not callable(getattr(implementation, n, None))]
        if missing:
            symbols = ", ".join(ENTRY_POINTS[n] for n in missing)
            raise TritonError.invalid_arg(
                f"backend '{name}' ({origin}) does not define {', '.join(missing)} ({symbols})"
            )
        entry: dict[str, Callable[..., Any]] = {
            n: getattr(implementation, n, None) or _noop for n in ENTRY_POINTS
        }
        if entry["model_instance_ready"] is _noop:
            entry["model_instance_ready"] = _always_ready
        self.initialize: Callable[[Backend], None] = entry["initialize"]
        self.finalize: Callable[[Backend], None] = entry["finalize"]
        self.get_backend_attribute: Callable[[Backend, BackendAttributes], None] = entry[
            "get_backend_attribute"
        ]
        self.model_initialize: Callable[[Model], None] = entry["model_initialize"]
        self.model_finalize: Callable[[Model], None] = entry["model_finalize"]
        self.model_instance_initialize: Callable[[ModelInstance], None] = entry[
            "model_instance_initialize"
        ]
        self.model_instance_finalize: Callable[[ModelInstance], None] = entry[
            "model_instance_finalize"
        ]
        self.model_instance_execute: Callable[
            [ModelInstance, Sequence[InferenceRequest]], None
        ] = entry["model_instance_execute"]
        # Asked when a client asks whether the model is ready: False (or an error) means the
        # instance cannot serve now (e.g. its process died and is restarting).
        self.model_instance_ready: Callable[[ModelInstance], bool] = entry["model_instance_ready"]
        # Tritium's own, optional: run each request as its own execution, in order, as that
        # many model_instance_execute calls would (a backend whose work happens in another
        # process does them in one exchange). Offered to ordinary models on the default
        # scheduler when requests queue up.
        self.model_instance_execute_each: Callable[
            [ModelInstance, Sequence[InferenceRequest]], None
        ] | None = getattr(implementation, EXECUTE_EACH, None)
        # Triton's core counts a compiled backend's requests and executions only from what
        # the backend reports; the server counts for every other backend.
        self.reports_statistics = bool(getattr(implementation, REPORTS_STATISTICS, False))
        self.logs_configuration = bool(getattr(implementation, LOGS_CONFIGURATION, False))
