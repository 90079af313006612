"""Which scheduler serves a backend's model: Triton picks it from the configuration
(`dynamic_batching`, `sequence_batching`), else the default one. An ensemble's is always the
EnsembleScheduler, which its model builds itself. A custom batching strategy the model loaded
is the dynamic batcher's to consult."""

from __future__ import annotations

from collections.abc import Sequence

from tritonclient.grpc import model_config_pb2 as mc

from ..backend.handles import ExecutionPolicy
from .base import ExecutionInstance, InstanceScheduler
from .batch_strategy import BatchStrategy
from .default import DefaultScheduler
from .dynamic_batch_scheduler import DynamicBatchScheduler
from .sequence_batch_scheduler import SequenceBatchScheduler


def create_scheduler(
    config: mc.ModelConfig,
    instances: Sequence[ExecutionInstance],
    policy: ExecutionPolicy,
    strategy: BatchStrategy | None = None,
) -> InstanceScheduler:
    """The scheduler for a model whose configuration is final and instances initialized."""
    if config.HasField("sequence_batching"):
        return SequenceBatchScheduler(config, instances)
    if config.HasField("dynamic_batching"):
        return DynamicBatchScheduler(config, instances, policy, strategy)
    return DefaultScheduler(config.name, instances, policy)
