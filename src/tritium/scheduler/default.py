"""The default scheduler: each request runs alone on the next free instance.

One queue feeds one thread per execution slot. Under the BLOCKING policy every instance is its
own slot; under DEVICE_BLOCKING the instances sharing a device share one thread, taking turns.

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
import threading
import time
from collections import defaultdict
from collections.abc import Sequence

from ..backend.handles import ExecutionPolicy
from ..handoff import hand_off
from ..request import InferenceRequest
from .base import ExecutionInstance, drop_cancelled, server_stopping

# The most queued requests an instance takes in one go (each its own execution), and the time
# their executions may take together: one wake-up costs tens of microseconds, so a share is
# worth taking only while executions are that short.
MAX_EACH = 16
SHARE_NS = 10_000_000


class DefaultScheduler:
    def __init__(
        self,
        model_name: str,
        instances: Sequence[ExecutionInstance],
        policy: ExecutionPolicy = ExecutionPolicy.BLOCKING,
    ) -> None:
        self._model_name = model_name
        self._queue: queue.SimpleQueue[InferenceRequest | None] = queue.SimpleQueue()
        self._slots = execution_slots(instances, policy)
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for index, slot in enumerate(self._slots):
            thread = threading.Thread(
                target=self._run,
                args=(slot,),
                name=f"{self._model_name}-exec-{index}",
                daemon=True,
            )
            thread.start()
            self._threads.append(thread)

    def enqueue(self, request: InferenceRequest) -> None:
        # While other requests of the caller's frontend await their answers, those its event
        # loop reads in one turn are queued together at the turn's end (see handoff).
        hand_off(self._queue.put, request)

    def stop(self) -> None:
        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join()
        self._threads.clear()

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
            request.respond_error(stopping)

    def _run(self, slot: list[ExecutionInstance]) -> None:
        turns = itertools.cycle(slot)
        usual_ns = 0  # how long one execution of this slot's usually takes (moving average)
        while True:
            request = self._queue.get()
            if request is None:
                return
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
        limit = max(1, min(MAX_EACH, 1 + self._queue.qsize() // len(self._slots), by_time))
        taken = [first]
        while len(taken) < limit:
            try:
                request = self._queue.get_nowait()
            except queue.Empty:
                break
            if request is None:  # stopping: run these, then stop
                self._queue.put(None)
                break
            taken.append(request)
        return taken


def execution_slots(
    instances: Sequence[ExecutionInstance], policy: ExecutionPolicy
) -> list[list[ExecutionInstance]]:
    if policy is ExecutionPolicy.BLOCKING:
        return [[instance] for instance in instances]
    by_device: dict[tuple[str, int], list[ExecutionInstance]] = defaultdict(list)
    for instance in instances:
        by_device[(instance.handle.kind, instance.handle.device_id)].append(instance)
    return list(by_device.values())
