"""Schedulers: take a model's requests and choose when and on which instance they execute."""

from .base import Scheduler
from .default import DefaultScheduler
from .factory import create_scheduler

__all__ = ["DefaultScheduler", "Scheduler", "create_scheduler"]
