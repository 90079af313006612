"""Tritium in-process: Triton's in-process Python API (the `tritonserver` package's shape).

    import tritonserver                      # or: from tritium import inprocess as tritonserver
    server = tritonserver.Server(model_repository="models").start(wait_until_ready=True)
    for response in server.model("add_sub").infer(inputs={"INPUT0": a, "INPUT1": b}):
        print(numpy.from_dlpack(response.outputs["OUTPUT0"]))

Names, signatures and semantics follow Triton core's `python/tritonserver` package; requests go
straight to Tritium's core (no port, no copy of the inputs). PyTriton's `bind` shape is in
`tritium.inprocess.pytriton`, the pytest plugin in `tritium.inprocess.pytest_plugin`.
"""

from .allocators import MemoryAllocator, MemoryBuffer, NumpyAllocator, default_memory_allocators
from .enums import (
    DataType,
    DLDeviceType,
    InstanceGroupKind,
    LogFormat,
    MemoryType,
    MetricFormat,
    ModelBatchFlag,
    ModelControlMode,
    ModelTxnPropertyFlag,
    RateLimitMode,
)
from .errors import (
    AlreadyExistsError,
    CancelledError,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    TritonError,
    UnavailableError,
    UnknownError,
    UnsupportedError,
)
from .frontends import FrontendAddresses
from .model import Model
from .request import InferenceRequest
from .response import AsyncResponseIterator, InferenceResponse, ResponseIterator
from .server import ModelDictionary, Options, RateLimiterResource, Server
from .tensor import Tensor

__all__ = [
    "AlreadyExistsError",
    "AsyncResponseIterator",
    "CancelledError",
    "DLDeviceType",
    "DataType",
    "FrontendAddresses",
    "InferenceRequest",
    "InferenceResponse",
    "InstanceGroupKind",
    "InternalError",
    "InvalidArgumentError",
    "LogFormat",
    "MemoryAllocator",
    "MemoryBuffer",
    "MemoryType",
    "MetricFormat",
    "Model",
    "ModelBatchFlag",
    "ModelControlMode",
    "ModelDictionary",
    "ModelTxnPropertyFlag",
    "NotFoundError",
    "NumpyAllocator",
    "Options",
    "RateLimitMode",
    "RateLimiterResource",
    "ResponseIterator",
    "Server",
    "Tensor",
    "TritonError",
    "UnavailableError",
    "UnknownError",
    "UnsupportedError",
    "default_memory_allocators",
]
