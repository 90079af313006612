"""The default scheduler: each request runs alone on the next free instance.

One queue feeds one thread per execution slot. Under the BLOCKING policy every instance is its
own slot; under DEVICE_BLOCKING the instances sharing a device share one thread, taking turns.

An instance-group update (`update_instances`) starts threads for new slots and retires those
whose slot is gone: an idle retired thread is woken by a token on the queue (which the others
skip), a busy one leaves once its execution is done.

Requests that queue up while an instance is busy still run one per execution, in arrival order,
as in Triton; an instance that can (`can_execute_each`: the python backend, whose stub runs
them) takes its share of them in one go, and each still runs as its own execution. A share is
bounded by time as well as by count: requests taken are committed to (a server exiting, or a
cancellation, reaches only those still queued), so a slot whose executions take long takes
them one at a time, as Triton's scheduler does.
"""

from __future__ import annotations

import itertools
import queue
import time
from collections.abc import Sequence
from typing import cast

from ..backend.handles import ExecutionPolicy
from ..handoff import hand_off, release_wakeups, releases_wakeups
from ..request import InferenceRequest
from .base import (
    ExecutionInstance,
    Instances,
    RefusesWhenStopping,
    Release,
    drop_cancelled,
    server_stopping,
)
from .slot_threads import SlotThreads, SlotWorker

# The most queued requests an instance takes in one go (each its own execution), and the time
# their executions may take together: one wake-up costs tens of microseconds, so a share is
# worth taking only while executions are that short.
MAX_EACH = 16
SHARE_NS = 10_000_000
# How often a retiring slot's idle thread is woken again while it has not left yet (the token
# may have gone to another idle thread).
_WAKE_RETRY_S = 0.005


class _Wake:
    """A queue token that wakes an idle thread, so that a retired one sees it is retired."""


_WAKE = _Wake()
_Queued = InferenceRequest | None | _Wake


class DefaultScheduler(RefusesWhenStopping):
    def __init__(
        self,
        model_name: str,
        instances: Sequence[ExecutionInstance],
        policy: ExecutionPolicy = ExecutionPolicy.BLOCKING,
    ) -> None:
        self._model_name = model_name
        self._queue: queue.SimpleQueue[_Queued] = queue.SimpleQueue()
        self._slots = SlotThreads(f"{model_name}-exec", instances, policy, self._run)

    def start(self) -> None:
        self._slots.start()

    def update_instances(self, added: Instances, removed: Instances, release: Release) -> None:
        retiring = self._slots.update(added, removed)
        while alive := [worker for worker in retiring if worker.is_alive()]:
            # An idle retired thread waits on the queue: enough tokens that every idle thread
            # gets one (a busy one leaves after its execution, unwoken).
            if idle := sum(worker.idle for worker in alive):
                for _ in range(idle + len(self._slots)):
                    self._queue.put(_WAKE)
            for worker in alive:
                assert worker.thread is not None
                worker.thread.join(_WAKE_RETRY_S)
        for instance in removed:
            release(instance)

    def enqueue(self, request: InferenceRequest) -> None:
        if self._refusing:
            raise server_stopping()
        # While other requests of the caller's frontend await their answers, those its event
        # loop reads in one turn are queued together at the turn's end (see handoff).
        hand_off(self._queue.put, request)

    def stop(self) -> None:
        workers = self._slots.take_all()
        for _ in workers:
            self._queue.put(None)
        for worker in workers:
            assert worker.thread is not None
            worker.thread.join()

    def fail_queued(self) -> None:
        stopping = server_stopping()
        while True:
            try:
                request = self._queue.get_nowait()
            except queue.Empty:
                return
            if request is None:  # a stop already asked for: leave it for the threads
                self._queue.put(None)
                return
            if request is not _WAKE:
                cast(InferenceRequest, request).respond_error(stopping)

    def _run(self, worker: SlotWorker) -> None:
        # The wake-ups of an execution's closing answers may wait until this thread's next
        # execution is under way; never while it waits for work (see handoff).
        releases_wakeups()
        try:
            self._serve(worker)
        finally:
            release_wakeups()

    def _serve(self, worker: SlotWorker) -> None:
        turns = itertools.cycle(worker.slot)
        usual_ns = 0  # how long one execution of this slot's usually takes (moving average)
        get, get_nowait = self._queue.get, self._queue.get_nowait
        while not worker.retired:
            try:
                request = get_nowait()
            except queue.Empty:
                release_wakeups()
                worker.idle = True
                request = get()
                worker.idle = False
            if request is None:
                return
            if request is _WAKE:
                continue
            request = cast(InferenceRequest, request)
            if not drop_cancelled([request]):
                continue
            instance = next(turns)
            start = time.perf_counter_ns()
            if instance.can_execute_each and not self._queue.empty():
                queued = drop_cancelled(self._take_share(request, usual_ns))
                instance.execute_each(queued)
                count = len(queued)
                del queued
            else:
                instance.execute([request])
                count = 1
            usual_ns = (3 * usual_ns + (time.perf_counter_ns() - start) // count) // 4
            # Let go of the requests while waiting for the next: their tensors may be views of
            # a client's shared-memory region, which is unmapped only when the last view goes.
            del request

    def _take_share(self, first: InferenceRequest, usual_ns: int) -> list[InferenceRequest]:
        """`first` and more of the queued requests: at most this slot's share of them (the
        other slots' threads take the rest), MAX_EACH, and as many as usually run in
        SHARE_NS (one alone until the slot has timed an execution)."""
        by_time = SHARE_NS // usual_ns if usual_ns else 1
        limit = max(1, min(MAX_EACH, 1 + self._queue.qsize() // max(len(self._slots), 1), by_time))
        taken = [first]
        while len(taken) < limit:
            try:
                request = self._queue.get_nowait()
            except queue.Empty:
                break
            if request is None:  # stopping: run these, then stop
                self._queue.put(None)
                break
            if request is not _WAKE:
                taken.append(cast(InferenceRequest, request))
        return taken

