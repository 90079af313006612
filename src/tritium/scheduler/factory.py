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
from .ensemble_scheduler import EnsembleScheduler

if TYPE_CHECKING:
    from ..model.instance import TritonModelInstance
    from ..model.statistics import ModelStatistics
    from ..server import InferenceServer


def create_scheduler(
    config: mc.ModelConfig,
    instances: Sequence[TritonModelInstance],
    policy: ExecutionPolicy,
    *,
    server: InferenceServer | None = None,
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
