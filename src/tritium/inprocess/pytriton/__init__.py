"""PyTriton's shape on Tritium: bind Python functions as models, decorators, ModelClient.

A PyTriton script needs only its imports changed, either all from here:

    from tritium.inprocess.pytriton import (Triton, TritonConfig, ModelConfig, DynamicBatcher,
                                            Tensor, batch, sample, first_value, group_by_values,
                                            ModelClient, DecoupledModelClient)

or module for module, from `tritium.pytriton` (`tritium.pytriton.triton`, `.decorators`,
`.model_config`, `.client`, `.exceptions`, `.proxy.types`), which mirrors PyTriton's layout.
"""

from .client import (
    DecoupledModelClient,
    ModelClient,
    PyTritonClientError,
    PyTritonClientInferenceServerError,
    PyTritonClientModelDoesntSupportBatchingError,
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
from .exceptions import (
    PyTritonBadParameterError,
    PyTritonError,
    PyTritonInvalidOperationError,
    PyTritonModelConfigError,
    PyTritonRuntimeError,
    PyTritonUnrecoverableError,
    PyTritonValidationError,
)
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
    "ConstantPadder",
    "DecoupledModelClient",
    "DefaultTritonLifecyclePolicy",
    "DynamicBatcher",
    "ModelClient",
    "ModelConfig",
    "PyTritonBadParameterError",
    "PyTritonClientError",
    "PyTritonClientInferenceServerError",
    "PyTritonClientModelDoesntSupportBatchingError",
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
