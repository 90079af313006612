"""Which scheduler serves a model: Triton picks it from the configuration
(`dynamic_batching`, `sequence_batching`, `ensemble_scheduling`), else the default one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tritonclient.grpc import model_config_pb2 as mc

from ..backend.handles import ExecutionPolicy
from .base import ExecutionInstance, Scheduler
from .default import DefaultScheduler
from .dynamic_batch_scheduler import DynamicBatchScheduler
from .ensemble_scheduler import EnsembleScheduler, EnsembleServer
from .sequence_batch_scheduler import SequenceBatchScheduler

if TYPE_CHECKING:
    from ..statistics import ModelStatistics


def create_scheduler(
    config: mc.ModelConfig,
    instances: Sequence[ExecutionInstance],
    policy: ExecutionPolicy,
    *,
    server: EnsembleServer | None = None,
    statistics: ModelStatistics | None = None,
) -> Scheduler:
    """The scheduler for a model whose configuration is final and instances initialized.

    An ensemble has no instances: its scheduler sends each step through `server` and records
    the ensemble's own `statistics`."""
    if config.HasField("ensemble_scheduling"):
        assert server is not None and statistics is not None
        return EnsembleScheduler(config, server, statistics)
    if config.HasField("sequence_batching"):
        return SequenceBatchScheduler(config, instances)
    if config.HasField("dynamic_batching"):
        return DynamicBatchScheduler(config, instances, policy)
    return DefaultScheduler(config.name, instances, policy)
