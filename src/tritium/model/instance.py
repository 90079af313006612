"""TritonModelInstance (server side): runs the backend's execute for one instance.

Triton's TritonModelInstance: it owns the backend handle of one instance, stamps execution
times, and guarantees that a request never goes unanswered: an exception from the backend, or a
non-decoupled backend returning without responding (and without rescheduling the request),
fails exactly the requests left open.

It counts executions (and rescheduled runs) in the model's statistics, unless the backend
counts them itself (`reports_statistics`: a compiled backend, as in Triton); requests it fails
for the backend are counted by the server either way.

`initialize` runs the model's warmup samples (`warmup`) on the instance before it serves.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from time import perf_counter_ns

from ..backend.api import BackendLibrary
from ..backend.handles import ModelInstance as InstanceHandle
from ..errors import TritonError, as_triton_error
from ..handoff import release_wakeups
from ..request import InferenceRequest
from ..scheduler.rate_limiter import RateLimiter
from ..statistics import ModelStatistics
from .warmup import warm_up, warmup_samples

log = logging.getLogger("tritium.model")


class TritonModelInstance:
    def __init__(
        self,
        handle: InstanceHandle,
        library: BackendLibrary,
        statistics: ModelStatistics,
        decoupled: bool,
        rate_limiter: RateLimiter | None = None,
        gpu: int = -1,
    ) -> None:
        self.handle = handle
        # The server's GPU this instance runs on (-1: none, or a Ray worker's), which its
        # requests' inference metrics are labelled with.
        self._gpu = gpu
        self.name = handle.name
        self._library = library
        self._statistics = statistics
        self._decoupled = decoupled
        # Guards the rule "execute never runs twice at once on one instance", whatever thread
        # layout the scheduler picks.
        self._busy = threading.Lock()
        self._rate_limiter = rate_limiter
        self._limits = (
            rate_limiter.register(handle.device_id, handle.group.rate_limiter)
            if rate_limiter is not None else None
        )
        # Queued requests may run as executions of one each in one go (execute_each): an
        # ordinary model whose backend offers it, with no rate limiter deciding each start.
        self.can_execute_each = (library.model_instance_execute_each is not None
                                 and not decoupled and self._limits is None)
        self._backend_counts = library.reports_statistics

    def initialize(self) -> None:
        """The backend's instance initialization, then the model's warmup samples on this
        instance (none on a passive one, which never executes), as Triton does before an
        instance serves; with a rate limiter they wait for the instance's resources, as
        Triton's warmup does."""
        self._library.model_instance_initialize(self.handle)
        model = self.handle.model
        if model.config.model_warmup and not self.handle.is_passive:
            samples = warmup_samples(model.config, model.repository_path)
            warm_up(samples, model.name, model.version, self.name, self.execute,
                    self._statistics)

    def is_ready(self) -> bool:
        try:
            return bool(self._library.model_instance_ready(self.handle))
        except Exception:
            log.debug("instance '%s' readiness check raised", self.name, exc_info=True)
            return False

    def finalize(self) -> None:
        if self._limits is not None:
            assert self._rate_limiter is not None
            self._rate_limiter.unregister(self._limits)
            self._limits = None
        try:
            self._library.model_instance_finalize(self.handle)
        except Exception:
            log.exception("instance '%s' failed to finalize", self.name)

    def execute(self, requests: Sequence[InferenceRequest]) -> None:
        if self._limits is None:
            self._execute(requests)
        else:  # queue time goes on until the resources are free
            self.execute_when_allowed(lambda: requests)

    @property
    def rate_limited(self) -> bool:
        return self._limits is not None

    def execute_when_allowed(self, take: Callable[[], Sequence[InferenceRequest]]) -> None:
        """A rate-limited instance: wait for the resources first, then execute what `take`
        gives (nothing: hand them back unused). Triton's dynamic batcher keeps adding requests
        to a batch until the rate limiter lets an instance run it; a batch taken only once the
        resources are held is that batch."""
        limits = self._limits
        assert limits is not None and self._rate_limiter is not None
        release_wakeups()  # the answers this thread holds go before it waits for resources
        self._rate_limiter.acquire(limits)
        ran = False
        try:
            if taken := take():
                ran = True
                self._execute(taken)
        finally:
            self._rate_limiter.release(limits, executed=ran)

    def execute_each(self, requests: Sequence[InferenceRequest]) -> None:
        """Each request its own execution, in order, as many `execute([request])` calls would
        run them (only where `can_execute_each`); the backend may time each one itself."""
        self._execute(requests, each=True)

    def _execute(self, requests: Sequence[InferenceRequest], each: bool = False) -> None:
        with self._busy:
            start = perf_counter_ns()
            backend_counts = self._backend_counts
            gpu = self._gpu
            for request in requests:
                request.exec_start_ns = start
                request.exec_end_ns = 0
                request.gpu = gpu
                if backend_counts:
                    request.statistics_by_backend = True
                    request.reported_statistics = None
            try:
                if each:
                    execute_each = self._library.model_instance_execute_each
                    assert execute_each is not None  # the scheduler asks can_execute_each
                    execute_each(self.handle, requests)
                else:
                    self._library.model_instance_execute(self.handle, requests)
            except Exception as exc:
                log.debug("instance '%s' execute raised", self.name, exc_info=True)
                self._fail_open(requests, as_triton_error(exc))
            else:
                if not self._decoupled:
                    unanswered = [
                        request for request in requests
                        if (sender := request.response_sender) is not None
                        and not sender.is_completed and not request.answered_later
                        and not request.rescheduled
                    ]
                    if unanswered:
                        # One execution's requests fail together; of several, only its own.
                        self._fail_open(unanswered if each else requests, TritonError.internal(
                            f"backend of model '{self.handle.model.name}' returned from "
                            "execute without sending a response"
                        ))
            end = perf_counter_ns()
            statistics = self._statistics
            for request in requests:
                if not request.exec_end_ns:
                    request.exec_end_ns = end
                if request.rescheduled:  # each run of a rescheduled request counts, as in Triton
                    statistics.record_request(request, True)
            if backend_counts:
                return
            if each:
                for request in requests:
                    statistics.record_execution([request])
            else:
                statistics.record_execution(requests)

    @staticmethod
    def _fail_open(requests: Sequence[InferenceRequest], error: TritonError) -> None:
        for request in requests:
            request.rescheduled = False  # a failed execution runs nothing again
            sender = request.response_sender
            if sender is not None and not sender.is_completed and not request.answered_later:
                request.statistics_by_backend = False  # the server answers, and counts
                request.respond_error(error)
