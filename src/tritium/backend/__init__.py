"""The backend API: everything a backend may use, and nothing of the server's internals.

Backends import from here (plus `tritium.tensor` and `tritium.errors`), as Triton backends
include only `tritonbackend.h`. Backend authors keep Triton's names: `Model`, `ModelInstance`
(the handles, `handles`), `ModelState`, `ModelInstanceState` (the helper base classes,
`state`); the server's own classes are named apart (TritonModel, TritonModelInstance).

`api` (the entry points, found by name), `handles`, `state`, `server_api` (ServerApi: what a
backend may ask of the server) and `manager` (BackendManager: finds, loads and shares
backends; the server's side, not for backends). `hold_wakeups`, `release_wakeups`: a backend
whose execute ends with its answers holds the frontends' wake-ups for them, and one whose
execution runs elsewhere (the python backend's stub) releases them once it has handed the
next execution over, or before it waits for anything else (`tritium.handoff`).
"""

from ..custom_metrics import MetricKind
from ..errors import Code, TritonError
from ..handoff import hold_wakeups, release_wakeups
from ..request import (
    REQUEST_RELEASE_ALL,
    REQUEST_RELEASE_RESCHEDULE,
    RESPONSE_COMPLETE_FINAL,
    InferenceRequest,
    InferenceResponse,
    RequestedOutput,
    ResponseSender,
)
from ..tensor import Tensor
from .api import ENTRY_POINTS, BackendAttributes
from .handles import Backend, ExecutionPolicy, Model, ModelInstance
from .server_api import ServerApi
from .state import DecoupledInstanceState, ModelInstanceState, ModelState

Request = InferenceRequest
Response = InferenceResponse

__all__ = [
    "ENTRY_POINTS",
    "REQUEST_RELEASE_ALL",
    "REQUEST_RELEASE_RESCHEDULE",
    "RESPONSE_COMPLETE_FINAL",
    "Backend",
    "BackendAttributes",
    "Code",
    "DecoupledInstanceState",
    "ExecutionPolicy",
    "InferenceRequest",
    "InferenceResponse",
    "MetricKind",
    "Model",
    "ModelInstance",
    "ModelInstanceState",
    "ModelState",
    "Request",
    "RequestedOutput",
    "Response",
    "ResponseSender",
    "ServerApi",
    "Tensor",
    "TritonError",
    "hold_wakeups",
    "release_wakeups",
]
