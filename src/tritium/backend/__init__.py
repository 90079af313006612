"""The backend API: everything a backend may use, and nothing of the server's internals.

Backends import from here (plus `tritium.tensor` and `tritium.errors`), as Triton backends
include only `tritonbackend.h`.
"""

from ..custom_metrics import MetricKind
from ..errors import Code, TritonError
from ..request import (
    RESPONSE_COMPLETE_FINAL,
    InferenceRequest,
    InferenceResponse,
    RequestedOutput,
    ResponseSender,
)
from ..tensor import Tensor
from .api import ENTRY_POINTS, BackendAttributes
from .handles import Backend, ExecutionPolicy, Model, ModelInstance
from .state import DecoupledInstanceState, ModelInstanceState, ModelState

Request = InferenceRequest
Response = InferenceResponse

__all__ = [
    "ENTRY_POINTS",
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
    "Tensor",
    "TritonError",
]
