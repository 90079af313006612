"""PyTriton's shape on Tritium: bind Python functions as models, decorators, ModelClient.

A PyTriton script needs only its imports changed, either all from here:

    from tritium.inprocess.pytriton import (Triton, TritonConfig, ModelConfig, DynamicBatcher,
                                            Tensor, batch, sample, first_value, group_by_values,
                                            ModelClient, DecoupledModelClient,
                                            FuturesModelClient, AsyncioModelClient)

or module for module, from `tritium.pytriton` (`tritium.pytriton.triton`, `.decorators`,
`.model_config`, `.client`, `.exceptions`, `.proxy.types`), which mirrors PyTriton's layout.
"""

from .asyncio_client import AsyncioDecoupledModelClient, AsyncioModelClient
from .client import ModelClient
from .client_errors import (
    PyTritonClientClosedError,
    PyTritonClientError,
    PyTritonClientInferenceServerError,
    PyTritonClientInvalidUrlError,
    PyTritonClientModelDoesntSupportBatchingError,
    PyTritonClientModelUnavailableError,
    PyTritonClientQueueFullError,
    PyTritonClientTimeoutError,
    PyTritonClientValueError,
)
from .context import TritonContext
from .decorators import (
    ConstantPadder,
    batch,
    convert_output,
    fill_optionals,
    first_value,
    get_inference_request_batch_size,
    group_by_keys,
    group_by_values,
    pad_batch,
    sample,
    triton_context,
)
from .decoupled_client import DecoupledModelClient
from .exceptions import (
    PyTritonBadParameterError,
    PyTritonError,
    PyTritonInvalidOperationError,
    PyTritonModelConfigError,
    PyTritonRuntimeError,
    PyTritonUnrecoverableError,
    PyTritonValidationError,
)
from .futures_client import FuturesModelClient
from .model_config import (
    DynamicBatcher,
    ModelConfig,
    QueuePolicy,
    Tensor,
    TimeoutAction,
    TritonModelConfig,
)
from .proxy import Request
from .remote import RemoteTriton
from .triton import (
    DefaultTritonLifecyclePolicy,
    Triton,
    TritonConfig,
    TritonLifecyclePolicy,
    TritonSecurityConfig,
    VertextAILifecyclePolicy,
)

__all__ = [
    "AsyncioDecoupledModelClient",
    "AsyncioModelClient",
    "ConstantPadder",
    "DecoupledModelClient",
    "DefaultTritonLifecyclePolicy",
    "DynamicBatcher",
    "FuturesModelClient",
    "ModelClient",
    "ModelConfig",
    "PyTritonBadParameterError",
    "PyTritonClientClosedError",
    "PyTritonClientError",
    "PyTritonClientInferenceServerError",
    "PyTritonClientInvalidUrlError",
    "PyTritonClientModelDoesntSupportBatchingError",
    "PyTritonClientModelUnavailableError",
    "PyTritonClientQueueFullError",
    "PyTritonClientTimeoutError",
    "PyTritonClientValueError",
    "PyTritonError",
    "PyTritonInvalidOperationError",
    "PyTritonModelConfigError",
    "PyTritonRuntimeError",
    "PyTritonUnrecoverableError",
    "PyTritonValidationError",
    "QueuePolicy",
    "RemoteTriton",
    "Request",
    "Tensor",
    "TimeoutAction",
    "Triton",
    "TritonConfig",
    "TritonContext",
    "TritonLifecyclePolicy",
    "TritonModelConfig",
    "TritonSecurityConfig",
    "VertextAILifecyclePolicy",
    "batch",
    "convert_output",
    "fill_optionals",
    "first_value",
    "get_inference_request_batch_size",
    "group_by_keys",
    "group_by_values",
    "pad_batch",
    "sample",
    "triton_context",
]
