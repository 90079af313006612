"""The dynamic batcher (`dynamic_batching { ... }`): Triton's DynamicBatchScheduler.

Every execution slot (an instance, or the instances sharing a device under DEVICE_BLOCKING)
runs a thread that, whenever it is free, forms the next batch from the shared priority queue and
executes it; so several instances stay busy, and a free instance takes a ready batch at once.
Forming a batch follows Triton's GetDynamicBatch: take requests in priority order while their
summed batch size stays within `max_batch_size` and their shapes agree (inputs marked
`allow_ragged_batch` and fixed-size inputs are not compared); stop at a preferred batch size; if
the batch could still grow, wait until the oldest request has queued for
`max_queue_delay_microseconds` (or a queued request's timeout is due), then send what there is.
A custom batching strategy (Triton's TRITONBACKEND_ModelBatch* library) is asked too: each time
a batch is formed it begins one, is asked in turn whether each candidate that passed the checks
above joins it (the first one too), and the first it refuses ends the batch, as a different
shape does; a first request it refuses still runs, alone, since no batch would ever take it.
An instance-group update starts threads for new slots; a retired slot's thread leaves once its
execution, if any, is done, and the others take the queue.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Hashable, Sequence
from time import perf_counter_ns

from tritonclient.grpc import model_config_pb2 as mc

from ..backend.handles import ExecutionPolicy
from ..errors import TritonError
from ..request import InferenceRequest
from .base import (
    ExecutionInstance,
    Instances,
    RefusesWhenStopping,
    Release,
    drop_cancelled,
    server_stopping,
)
from .batch_strategy import BatchStrategy
from .delay_hook import RECHECK_S, delay_count
from .equal_inputs import RequiredEqualInputs
from .priority_queue import PriorityQueue
from .response_order import ResponseOrder
from .slot_threads import SlotThreads, SlotWorker

log = logging.getLogger("tritium.scheduler")

_TIMEOUT_EXPIRED = "Request timeout expired"


class DynamicBatchScheduler(RefusesWhenStopping):
    def __init__(
        self,
        config: mc.ModelConfig,
        instances: Sequence[ExecutionInstance],
        policy: ExecutionPolicy = ExecutionPolicy.BLOCKING,
        strategy: BatchStrategy | None = None,
    ) -> None:
        batching = config.dynamic_batching
        self._strategy = strategy
        self._model_name = config.name
        self._slots = SlotThreads(f"{config.name}-batch", instances, policy, self._run)
        self._max_batch_size = max(config.max_batch_size, 1)
        self._preferred = frozenset(batching.preferred_batch_size)
        self._max_preferred = max(self._preferred, default=self._max_batch_size)
        self._delay_ns = batching.max_queue_delay_microseconds * 1000
        self._queue = PriorityQueue(batching)
        self._order = ResponseOrder() if batching.preserve_ordering else None
        self._equal = RequiredEqualInputs(config)
        # Triton's testing hook: no batch until this many requests are queued (then 0).
        self._held_until = delay_count("TRITONSERVER_DELAY_SCHEDULER")
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        # With timeouts in the queue policies, a watcher applies them at the deadline, even
        # while every instance is busy and no slot looks at the queue.
        self._deadlines = threading.Condition(self._lock) if self._queue.may_time_out else None
        self._stopping = False
        self._watcher: threading.Thread | None = None
        # Slots waiting for the oldest request's delay to pass, and the batch size queued: a
        # request that cannot complete the batch they wait for need not wake one (a wake-up,
        # a context switch, per request otherwise). Only for the plain case: one priority
        # level, no deadlines and no custom strategy (which may end the batch at any request).
        self._timed_waiters = 0
        self._queued_size = 0
        self._quiet_enqueue = (self._deadlines is None and batching.priority_levels <= 1
                               and strategy is None)
        # How late a timed wait wakes (a moving average): a thread waits that much less, so
        # that the batch leaves when the delay ends rather than ~100 us after on a VM.
        self._late_ns = 0

    def start(self) -> None:
        # Triton's words for a batcher it leaves at the process's priority (it sets none here).
        log.debug("Starting dynamic-batcher thread for %s at default nice...", self._model_name)
        self._slots.start()
        if self._deadlines is not None:
            self._watcher = threading.Thread(target=self._watch_deadlines,
                                             name=f"{self._model_name}-deadlines", daemon=True)
            self._watcher.start()

    def update_instances(self, added: Instances, removed: Instances, release: Release) -> None:
        with self._lock:
            retiring = self._slots.update(added, removed)
            self._ready.notify_all()  # a retired slot's idle thread leaves
        for worker in retiring:
            assert worker.thread is not None
            worker.thread.join()
        for instance in removed:
            release(instance)

    def enqueue(self, request: InferenceRequest) -> None:
        if self._refusing:
            raise server_stopping()
        with self._lock:
            try:
                self._queue.enqueue(request)
            except TritonError as error:
                refused: TritonError | None = error
            else:
                refused = None
                if self._order is not None:
                    self._order.hold(request)
                self._queued_size += request.batch_size if request.batch_size > 1 else 1
                if not self._joins_awaited_batch(request):
                    self._ready.notify()
                if self._deadlines is not None:
                    self._deadlines.notify()
        if refused is not None:
            request.respond_error(refused)

    def _joins_awaited_batch(self, request: InferenceRequest) -> bool:
        """Whether `request` (queued just now, lock held) only joins the batch a slot already
        waits to fill, without filling it or ending it by a different shape."""
        queued = self._queued_size
        if not self._quiet_enqueue or not self._timed_waiters or queued >= self._max_preferred \
                or queued in self._preferred:
            return False
        if self._equal.active:
            first = next(iter(self._queue))
            return self._equal.match(request, first, self._equal.key(first))
        return True

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
            self._ready.notify_all()
            if self._deadlines is not None:
                self._deadlines.notify_all()
            workers = self._slots.take_all()
        for worker in workers:
            assert worker.thread is not None
            worker.thread.join()
        if self._watcher is not None:
            self._watcher.join()
            self._watcher = None

    def fail_queued(self) -> None:
        with self._lock:
            queued = self._queue.take(len(self._queue))
            self._queued_size = 0
        stopping = server_stopping()
        for request in queued:
            request.respond_error(stopping)

    def _run(self, worker: SlotWorker) -> None:
        turns = itertools.cycle(worker.slot)
        while True:
            instance = next(turns)
            if instance.rate_limited:
                # Triton keeps filling a batch until the rate limiter lets an instance run it:
                # once a batch is worth sending, wait for the resources, then take the batch.
                with self._lock:
                    count, rejected = self._wait_for_batch(worker)
                _reject(rejected)
                if count is None:
                    return
                if count:
                    instance.execute_when_allowed(self._take_now)
                continue
            batch, rejected = self._next_batch(worker)
            _reject(rejected)
            if batch is None:
                return
            batch = drop_cancelled(batch)
            if batch:
                instance.execute(batch)

    def _watch_deadlines(self) -> None:
        assert self._deadlines is not None
        while True:
            with self._lock:
                if self._stopping:
                    return
                rejected, closest = self._queue.expire(perf_counter_ns())
                self._queued_size -= _size_of(rejected)
                if not rejected:
                    wait_ns = closest - perf_counter_ns() if closest else None
                    self._deadlines.wait(max(wait_ns, 0) / 1e9 if wait_ns is not None else None)
                    continue
            _reject(rejected)

    def _next_batch(
        self, worker: SlotWorker
    ) -> tuple[list[InferenceRequest] | None, list[InferenceRequest]]:
        """Wait for a batch worth sending; returns it (None: stop, or the worker's slot was
        retired), with the requests whose timeout expired (to reject outside the lock)."""
        with self._lock:
            count, rejected = self._wait_for_batch(worker)
            if not count:
                return (None if count is None else []), rejected
            return self._take(count), rejected

    def _take_now(self) -> list[InferenceRequest]:
        """The batch to run at once (a rate-limited instance got its resources): the queued
        requests the batch plan would send, what there is even if it could still grow."""
        with self._lock:
            rejected, closest_deadline = self._queue.expire(perf_counter_ns())
            self._queued_size -= _size_of(rejected)
            count = self._batch_plan(perf_counter_ns(), closest_deadline, at_once=True)[0] \
                if self._queue else 0
            batch = self._take(count) if count else []
        _reject(rejected)
        return drop_cancelled(batch)

    def _take(self, count: int) -> list[InferenceRequest]:
        """The first `count` queued requests; lock held."""
        batch = self._queue.take(count)
        self._queued_size -= _size_of(batch)
        if self._queue:
            self._ready.notify()  # another free slot can form the next batch
        return batch

    def _wait_for_batch(self, worker: SlotWorker) -> tuple[int | None, list[InferenceRequest]]:
        """Lock held: wait until a batch is worth sending; returns how many queued requests
        it takes (None: stop, or the worker's slot was retired; 0: only requests whose timeout
        expired, to reject outside the lock), with those requests."""
        rejected: list[InferenceRequest] = []
        while True:
            if worker.retired:
                if self._queue:
                    self._ready.notify()  # what this thread might have sent
                return None, rejected
            if self._held_until:
                if len(self._queue) < self._held_until and not self._stopping:
                    self._ready.wait(RECHECK_S)
                    continue
                self._held_until = 0
            now = perf_counter_ns()
            rejected, closest_deadline = self._queue.expire(now)
            if rejected:
                self._queued_size -= _size_of(rejected)
            if self._queue:
                count, wait_ns = self._batch_plan(now, closest_deadline)
                if count:
                    return count, rejected
            elif self._stopping:
                return None, rejected
            else:
                wait_ns = 0
            if rejected:
                return 0, rejected
            if wait_ns:
                self._timed_wait(wait_ns)
            else:
                self._ready.wait()

    def _timed_wait(self, wait_ns: int) -> None:
        """Wait up to `wait_ns` (less the usual lateness) for the batch to fill; lock held."""
        intended = perf_counter_ns() + wait_ns
        self._timed_waiters += 1
        try:
            notified = self._ready.wait(max(wait_ns - self._late_ns, 0) / 1e9)
        finally:
            self._timed_waiters -= 1
        if not notified:
            late = perf_counter_ns() - intended + self._late_ns
            # Bounded: a thread starved of the CPU for a while says nothing of timers.
            late = min(max(late, 0), self._delay_ns // 4)
            self._late_ns = (3 * self._late_ns + late) // 4

    def _batch_plan(self, now: int, closest_deadline: int,
                    at_once: bool = False) -> tuple[int, int]:
        """How many queued requests to send now, or (0, nanoseconds to wait); `at_once`: the
        batch leaves now, as large as it can be."""
        max_preferred = self._max_preferred
        max_batch_size = self._max_batch_size
        preferred = self._preferred
        pending = count = 0
        best_count = 0
        send_now = False
        oldest = now
        shape: Hashable = None
        first: InferenceRequest | None = None
        equal = self._equal
        check_shapes = equal.active
        strategy = self._strategy
        strategy_batch = strategy.begin() if strategy is not None else 0
        try:
            for request in self._queue:
                size = request.batch_size if request.batch_size > 1 else 1
                if first is None:
                    first = request
                    if check_shapes:
                        shape = equal.key(request)
                else:
                    if pending + size > max_preferred and not best_count:
                        best_count = count
                    if pending + size > max_batch_size:
                        send_now = True
                        break
                    if check_shapes and not equal.match(request, first, shape):
                        send_now = True
                        break
                refused = strategy is not None and not strategy.include(strategy_batch, request)
                if refused and count:
                    send_now = True
                    break
                pending += size
                count += 1
                if request.queue_start_ns < oldest:
                    oldest = request.queue_start_ns
                if pending in preferred:
                    best_count = count
                if refused:  # the first request, which no batch would take: it runs alone
                    send_now = True
                    break
        finally:
            if strategy is not None:
                strategy.end(strategy_batch)
        delay_ns = self._delay_ns
        # Within the usual lateness of a timed wait from the end of the delay counts as ended:
        # waiting out the rest would end it that much late.
        delay_exceeded = delay_ns != 0 and now - oldest >= delay_ns - self._late_ns
        if best_count and not delay_exceeded:
            return best_count, 0
        if send_now or pending >= max_preferred or delay_exceeded or delay_ns == 0 \
                or self._stopping or at_once:
            return count, 0
        wait_ns = delay_ns - (now - oldest)
        if closest_deadline:
            wait_ns = min(wait_ns, max(closest_deadline - now, 1000))
        return 0, wait_ns


def _size_of(requests: list[InferenceRequest]) -> int:
    return sum(r.batch_size if r.batch_size > 1 else 1 for r in requests)


def _reject(requests: list[InferenceRequest]) -> None:
    for request in requests:
        request.respond_error(TritonError.unavailable(_TIMEOUT_EXPIRED))
