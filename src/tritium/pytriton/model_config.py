"""`pytriton.model_config`: Tensor, ModelConfig, DynamicBatcher, QueuePolicy, TimeoutAction."""

from tritium.inprocess.pytriton.model_config import (
    DynamicBatcher,
    ModelConfig,
    QueuePolicy,
    Tensor,
    TimeoutAction,
    TritonModelConfig,
)

__all__ = ["DynamicBatcher", "ModelConfig", "QueuePolicy", "Tensor", "TimeoutAction",
           "TritonModelConfig"]
