"""Schedulers: take a model's requests and choose when and on which instance they execute.

`base` (the Scheduler contract and ExecutionInstance, what a scheduler needs of an instance),
`factory` (which scheduler a configuration asks for), `default`, `dynamic_batch_scheduler`
(with `priority_queue` and `response_order`), `sequence_batch_scheduler` (with
`sequence_batch`, `sequence_control`, `sequence_state`), `ensemble_scheduler` (with
`ensemble_plan`; EnsembleServer is what it needs of the server) and `rate_limiter`. Schedulers
import neither the model package that builds them nor the server.
"""

from .base import ExecutionInstance, Scheduler
from .default import DefaultScheduler
from .ensemble_scheduler import EnsembleServer
from .factory import create_scheduler

__all__ = [
    "DefaultScheduler", "EnsembleServer", "ExecutionInstance", "Scheduler", "create_scheduler",
]
