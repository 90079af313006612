"""The scheduler contract every scheduler (default, dynamic, sequence, ensemble) fulfils."""

from __future__ import annotations

from typing import Protocol

from ..request import InferenceRequest


class Scheduler(Protocol):
    def start(self) -> None:
        """Start execution threads; called once the instances are initialized."""

    def enqueue(self, request: InferenceRequest) -> None:
        """Accept a validated request; its responses go through its response sender."""

    def stop(self) -> None:
        """Run what is queued, then stop the execution threads (the model is unloading)."""
