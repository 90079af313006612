"""The scheduler contract every scheduler (default, dynamic, sequence, ensemble) fulfils, and
what a scheduler needs of the instances it runs requests on."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from ..backend.handles import ModelInstance
from ..errors import TritonError
from ..request import InferenceRequest


class ExecutionInstance(Protocol):
    """An instance a scheduler runs requests on: the server's TritonModelInstance
    (model/instance.py), seen through this much only, so that the schedulers do not import the
    model package that builds them."""

    @property
    def handle(self) -> ModelInstance:
        """The backend's handle of the instance (its kind, device and model)."""

    def execute(self, requests: Sequence[InferenceRequest]) -> None:
        """Run one batch through the backend; never concurrently on one instance."""

    @property
    def can_execute_each(self) -> bool:
        """Whether `execute_each` may run queued requests."""

    def execute_each(self, requests: Sequence[InferenceRequest]) -> None:
        """Run each request as its own execution, in order, as many `execute([request])`
        calls would (one exchange with a backend whose work happens in another process)."""

    @property
    def rate_limited(self) -> bool:
        """Whether the rate limiter decides when this instance executes."""

    def execute_when_allowed(self, take: Callable[[], list[InferenceRequest]]) -> None:
        """(A `rate_limited` instance.) Wait until the rate limiter lets it execute, then run
        the batch `take` gives then (none: nothing runs)."""


def drop_cancelled(requests: list[InferenceRequest]) -> list[InferenceRequest]:
    """The requests still wanted; those cancelled while queued (the client went away, or a
    C API caller called TRITONSERVER_InferenceRequestCancel) are answered CANCELLED without
    running, as Triton's scheduler does."""
    if not any(request.cancelled for request in requests):
        return requests
    for request in requests:
        if request.cancelled:
            request.respond_error(TritonError.cancelled(
                "the request was cancelled before it was executed"))
    return [request for request in requests if not request.cancelled]


class Scheduler(Protocol):
    def start(self) -> None:
        """Start execution threads; called once the instances are initialized."""

    def enqueue(self, request: InferenceRequest) -> None:
        """Accept a validated request; its responses go through its response sender."""

    def stop(self) -> None:
        """Run what is queued, then stop the execution threads (the model is unloading)."""

    def stop_accepting(self) -> None:
        """The server is exiting (Triton's scheduler Stop): refuse what would start new work
        with `server_stopping()`, every new request or, for a sequence batcher, a new
        sequence; what is queued and what continues an open sequence go on."""

    def open_sequences(self) -> int:
        """The sequences still open, which an exiting server waits for as for requests."""

    def fail_queued(self) -> None:
        """Answer every request still waiting for an execution with `server_stopping()`; those
        executing go on. The server is exiting: --exit-timeout-secs bounds the time to exit,
        and a queue run out could take far longer."""


# What an instance-group update gives a scheduler: the instances it changes, and what to call
# for each removed one once the scheduler is done with it.
Instances = Sequence[ExecutionInstance]
Release = Callable[[ExecutionInstance], None]


class InstanceScheduler(Scheduler, Protocol):
    """A scheduler of a backend's model: it runs requests on the model's instances, which an
    instance-group update changes while it serves."""

    def update_instances(self, added: Instances, removed: Instances, release: Release) -> None:
        """Triton's instance-group update: run requests on `added` (initialized) as well, and
        no more on `removed`. `release(instance)` is called for each removed instance once
        nothing runs on it or can start on it: before this returns, except for a sequence
        batcher's instance that still holds sequences, released when the last of them ends."""


class RefusesWhenStopping:
    """What the schedulers without sequences share of the exit: once `stop_accepting`, every
    new request is refused (their `enqueue` reads `_refusing`); no sequence is ever open."""

    _refusing = False

    def stop_accepting(self) -> None:
        self._refusing = True

    def open_sequences(self) -> int:
        return 0


def server_stopping() -> TritonError:
    """Triton's answer to a request its scheduler will not run: the server is stopping."""
    return TritonError.unavailable(
        "Server is stopping, scheduler for model has stopped accepting new inference requests"
    )
