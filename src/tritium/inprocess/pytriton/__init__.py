"""PyTriton's shape on Tritium: bind Python functions as models, decorators, ModelClient.

A PyTriton script needs only its imports changed:

    from tritium.inprocess.pytriton import (Triton, TritonConfig, ModelConfig, DynamicBatcher,
                                            Tensor, batch, sample, first_value, group_by_values,
                                            ModelClient)
"""

from .client import ModelClient, PyTritonClientTimeoutError
from .decorators import ConstantPadder, batch, first_value, group_by_values, sample
from .model_config import DynamicBatcher, ModelConfig, QueuePolicy, Tensor, TimeoutAction
from .proxy import Request
from .triton import Triton, TritonConfig
from .validation import PyTritonRuntimeError, PyTritonValidationError

__all__ = [
    "ConstantPadder",
    "DynamicBatcher",
    "ModelClient",
    "ModelConfig",
    "PyTritonClientTimeoutError",
    "PyTritonRuntimeError",
    "PyTritonValidationError",
    "QueuePolicy",
    "Request",
    "Tensor",
    "TimeoutAction",
    "Triton",
    "TritonConfig",
    "batch",
    "first_value",
    "group_by_values",
    "sample",
]
