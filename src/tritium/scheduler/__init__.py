"""Schedulers: take a model's requests and choose when and on which instance they execute.

`base` (the Scheduler contract, InstanceScheduler's for a backend's model, and
ExecutionInstance, what a scheduler needs of an instance), `factory` (which scheduler a
configuration asks for), `slot_threads` (a thread per execution slot, as instances come and
go), `default`, `dynamic_batch_scheduler` (with `priority_queue`, `response_order` and
`batch_strategy`, what it needs of a custom batching strategy),
`sequence_batch_scheduler` (with `sequence_batch`, `sequence_control`, `sequence_state`),
`ensemble_scheduler` (with `ensemble_plan`; EnsembleServer is what it needs of the server) and
`rate_limiter`. Schedulers import neither the model package that builds them nor the server.
"""

from .base import ExecutionInstance, InstanceScheduler, Scheduler
from .default import DefaultScheduler
from .ensemble_scheduler import EnsembleScheduler, EnsembleServer
from .factory import create_scheduler

__all__ = [
    "DefaultScheduler", "EnsembleScheduler", "EnsembleServer", "ExecutionInstance",
    "InstanceScheduler", "Scheduler", "create_scheduler",
]
