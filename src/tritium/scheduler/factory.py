"""Which scheduler serves a model: Triton picks it from the configuration
(`dynamic_batching`, `sequence_batching`, `ensemble_scheduling`), else the default one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from tritonclient.grpc import model_config_pb2 as mc

from ..backend.handles import ExecutionPolicy
from .base import Scheduler
from .default import DefaultScheduler
from .sequence_batch_scheduler import SequenceBatchScheduler
from .dynamic_batch_scheduler import DynamicBatchScheduler

if TYPE_CHECKING:
    from ..model.instance import ModelInstance


def create_scheduler(
    config: mc.ModelConfig,
    instances: Sequence[ModelInstance],
    policy: ExecutionPolicy,
) -> Scheduler:
    """The scheduler for a model whose configuration is final and instances initialized."""
    if config.HasField("sequence_batching"):
        return SequenceBatchScheduler(config, instances)
    if config.HasField("dynamic_batching"):
        return DynamicBatchScheduler(config, instances, policy)
    return DefaultScheduler(config.name, instances, policy)
