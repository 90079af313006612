"""Schedulers: take a model's requests and choose when and on which instance they execute."""

from .base import Scheduler
from .default import DefaultScheduler

__all__ = ["DefaultScheduler", "Scheduler"]
