"""The sequence batcher (`sequence_batching { ... }`): Triton's SequenceBatchScheduler.

A stateful model sees each sequence (the requests sharing a `sequence_id`, from the one flagged
START to the one flagged END) in order and on one instance slot, whatever else is running. This
module assigns sequences to slots: a START takes a free slot (lowest slot index first, so that
sequences spread over instances), a sequence arriving while every slot is taken waits whole in
the backlog until one frees, and a reaper thread releases the slot of a sequence idle for
longer than `max_sequence_idle_microseconds`. What a slot does with its requests is
`sequence_batch.py`.

An instance-group update adds batchers for new instances (their slots free, backlogged
sequences taking them at once); a removed instance's batcher takes no new sequence, and the
instance is released as soon as none of its slots holds a sequence: at once when it holds
none, otherwise when the last of its sequences ends (Triton lets them finish there).

With `iterative_sequence: true` (Triton's IterativeSequencer) a request that belongs to no
sequence starts one of its own (a fresh correlation ID, flagged START), and every request not
flagged END may be released with REQUEST_RELEASE_RESCHEDULE: once execute returns it is queued
again in its sequence, flags cleared, for the next iteration (a generative model's next step);
released otherwise, it ends its sequence.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Sequence

from tritonclient.grpc import model_config_pb2 as mc

from ..errors import TritonError
from ..request import SEQUENCE_END, SEQUENCE_START, InferenceRequest
from .base import ExecutionInstance, Instances, Release, server_stopping
from .delay_hook import delay_count
from .sequence_batch import (
    DirectSequenceBatch,
    OldestSequenceBatch,
    SequenceBatch,
    SlotQueue,
    fail_all,
)
from .sequence_control import SequenceControls
from .sequence_state import ImplicitState

log = logging.getLogger("tritium.scheduler")

CorrelationId = int | str
_Slot = tuple[int, int]  # (slot index, batcher index): heap order fills slot 0 everywhere first


class _Backlog:
    """A sequence waiting for a slot, with the requests it sent meanwhile. A request `timeout`
    bounds how long the whole sequence may wait (the earliest deadline of its requests)."""

    __slots__ = ("requests", "expires")

    def __init__(self) -> None:
        self.requests: SlotQueue = deque()
        self.expires = math.inf

    def add(self, request: InferenceRequest, now: float) -> bool:
        """Queue `request`; True if it brought the deadline forward."""
        self.requests.append(request)
        if request.timeout_us:
            expires = now + request.timeout_us / 1e6
            if expires < self.expires:
                self.expires = expires
                return True
        return False


class SequenceBatchScheduler:
    def __init__(self, config: mc.ModelConfig, instances: Sequence[ExecutionInstance]) -> None:
        self._model_name = config.name
        batcher = config.sequence_batching
        self._iterative = batcher.iterative_sequence
        self._sequence_ids = itertools.count(1)  # the iterative sequences' own IDs
        self._idle_s = batcher.max_sequence_idle_microseconds / 1e6
        # Sequence slots per instance: the batch size, or oldest's max_candidate_sequences.
        slot_count = max(1, config.max_batch_size)
        kind: type[SequenceBatch] = DirectSequenceBatch
        if batcher.HasField("oldest"):
            kind = OldestSequenceBatch
            if batcher.oldest.max_candidate_sequences > 0:
                slot_count = batcher.oldest.max_candidate_sequences
        model_dir = instances[0].handle.model.repository_path
        # What each batcher is built from (an instance-group update builds more).
        self._batch_args = (kind, slot_count, SequenceControls(config),
                            ImplicitState(config, model_dir), config)
        self._batchers: list[SequenceBatch] = [self._new_batch(i) for i in instances]
        self._index = {id(b): i for i, b in enumerate(self._batchers)}
        self._free: list[_Slot] = [
            (slot, index) for index in range(len(self._batchers)) for slot in range(slot_count)
        ]
        heapq.heapify(self._free)
        # Batchers of removed instances still holding sequences: index -> (slots held, what
        # releases the instance once none is).
        self._retiring: dict[int, tuple[int, Release]] = {}
        self._lock = threading.Lock()
        self._slots: dict[CorrelationId, _Slot] = {}
        self._backlog_of: dict[CorrelationId, _Backlog] = {}
        self._backlogs: deque[_Backlog] = deque()
        self._last_seen: dict[CorrelationId, float] = {}
        self._stopping = False
        self._refusing = False  # the server is exiting: no new sequence
        self._reaper_wake = threading.Condition(self._lock)
        self._reaper: threading.Thread | None = None
        # Triton's testing hooks (delay_hook): the requests queued in each batcher's slots.
        self.delay_count = delay_count("TRITONSERVER_DELAY_SCHEDULER")
        self._backlog_delay_count = delay_count("TRITONSERVER_BACKLOG_DELAY_SCHEDULER")
        self._queued_counts = [0] * len(self._batchers)

    def _new_batch(self, instance: ExecutionInstance) -> SequenceBatch:
        kind, slot_count, controls, states, config = self._batch_args
        return kind(self, instance, slot_count, controls, states, config)

    # -- the Scheduler contract ---------------------------------------------------------------

    def start(self) -> None:
        for index, batch in enumerate(self._batchers):
            batch.start(f"{self._model_name}-seq-{index}")
        self._reaper = threading.Thread(
            target=self._reap, name=f"{self._model_name}-seq-reaper", daemon=True
        )
        self._reaper.start()

    def update_instances(self, added: Instances, removed: Instances, release: Release) -> None:
        batchers = [self._new_batch(instance) for instance in added]
        gone = {id(instance) for instance in removed}
        idle: list[SequenceBatch] = []
        handed: list[tuple[SequenceBatch, int, SlotQueue]] = []
        with self._lock:
            for batch in batchers:
                index = len(self._batchers)
                self._batchers.append(batch)
                self._index[id(batch)] = index
                self._queued_counts.append(0)
                for slot in range(batch.slot_count):
                    heapq.heappush(self._free, (slot, index))
            leaving = {i for i, b in enumerate(self._batchers) if id(b.instance) in gone}
            free_of = {index: 0 for index in leaving}
            for _, index in self._free:
                if index in leaving:
                    free_of[index] += 1
            self._free = [entry for entry in self._free if entry[1] not in leaving]
            heapq.heapify(self._free)
            for index in sorted(leaving):
                held = self._batchers[index].slot_count - free_of[index]
                if held:
                    self._retiring[index] = (held, release)
                else:
                    idle.append(self._batchers[index])
            # Backlogged sequences take the new slots.
            while self._backlogs and self._free:
                where = heapq.heappop(self._free)
                requests = self._take_backlog(where)
                if requests is None:
                    heapq.heappush(self._free, where)
                else:
                    slot, index = where
                    handed.append((self._batchers[index], slot, requests))
        for index, batch in enumerate(batchers, len(self._batchers) - len(batchers)):
            batch.start(f"{self._model_name}-seq-{index}")
        for batch, slot, requests in handed:
            for request in requests:
                batch.enqueue(slot, request)
        for batch in idle:
            batch.stop()
            release(batch.instance)

    def enqueue(self, request: InferenceRequest) -> None:
        """Route `request` to its sequence's slot (or the backlog); raise TritonError with
        Triton's message for a request that cannot belong to a sequence."""
        model = request.model_name
        if request.batch_size > 1:
            raise TritonError.invalid_arg(
                f"inference request to model '{model}' must specify batch-size 1 due to "
                "requirements of sequence batcher"
            )
        correlation_id = request.correlation_id
        if self._iterative:
            if not correlation_id:
                correlation_id = request.correlation_id = next(self._sequence_ids)
                request.flags = SEQUENCE_START
            request.reschedulable = not request.flags & SEQUENCE_END
        if not correlation_id:
            raise TritonError.invalid_arg(
                f"inference request to model '{model}' must specify a non-zero or non-empty "
                "correlation ID"
            )
        start = bool(request.flags & SEQUENCE_START)
        end = bool(request.flags & SEQUENCE_END)
        with self._lock:
            if (self._stopping or self._refusing) and start:
                raise server_stopping()
            slot = self._slots.get(correlation_id)
            backlog = self._backlog_of.get(correlation_id) if slot is None else None
            if not start and slot is None and backlog is None:
                raise TritonError.invalid_arg(
                    f"inference request for sequence {correlation_id} to model '{model}' must "
                    "specify the START flag on the first request of the sequence"
                )
            now = self._last_seen[correlation_id] = time.monotonic()
            if start and (slot is not None or backlog is not None):
                # Triton goes on in the same slot (or backlog): the earlier sequence simply
                # ends early.
                log.warning(
                    "sequence %s for model '%s' has a conflict. The previous sequence did not "
                    "end before this sequence start. Previous sequence will be terminated "
                    "early.", correlation_id, model,
                )
            if slot is None and backlog is None and not self._free:
                backlog = _Backlog()
                self._backlogs.append(backlog)
                if not end:
                    self._backlog_of[correlation_id] = backlog
            elif backlog is not None and end:
                del self._backlog_of[correlation_id]
            if backlog is not None:
                if backlog.add(request, now):
                    self._reaper_wake.notify_all()
                return
            if slot is None:
                slot = self._slots[correlation_id] = heapq.heappop(self._free)
            if end:
                del self._slots[correlation_id]
        slot_index, batcher = slot
        self._batchers[batcher].enqueue(slot_index, request)

    def stop_accepting(self) -> None:
        with self._lock:
            # New sequences are refused; open ones go on, and idle ones are still reaped.
            self._refusing = True

    def open_sequences(self) -> int:
        with self._lock:
            return len(self._slots) + len(self._backlog_of)

    def fail_queued(self) -> None:
        """Fail the sequences still waiting for a slot; those holding a slot go on."""
        with self._lock:
            self._stopping = True
            stopping = server_stopping()
            for backlog in self._backlogs:
                fail_all(backlog.requests, stopping)
            self._backlogs.clear()
            self._backlog_of.clear()

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
            self._reaper_wake.notify_all()
        if self._reaper is not None:
            self._reaper.join()
            self._reaper = None
        for batch in self._batchers:
            batch.stop()
        with self._lock:
            stopping = server_stopping()
            for backlog in self._backlogs:
                fail_all(backlog.requests, stopping)
            self._backlogs.clear()
            self._backlog_of.clear()

    # -- called by the batchers -----------------------------------------------------------------

    def release_slot(
        self, batcher: SequenceBatch, slot: int, queue: SlotQueue, cancelled: bool
    ) -> None:
        """Triton's ReleaseSequenceSlot (batcher lock held): requests still queued behind an
        END, a release or a cancelled request fail; then the oldest backlogged sequence (a
        cancelled one fails whole) takes the slot, or it becomes free."""
        where = (slot, self._index[id(batcher)])
        if cancelled:
            head = queue[0]
            assert head is not None
            with self._lock:
                if self._slots.get(head.correlation_id) == where:
                    del self._slots[head.correlation_id]
                self._last_seen.pop(head.correlation_id, None)
            fail_all(queue, _sequence_cancelled())
        elif queue:
            fail_all(queue, TritonError.cancelled(
                "sequence slot released before the request could run"
            ))
        with self._lock:
            index = where[1]
            if index in self._retiring:  # a removed instance's: released with its last slot
                held, release = self._retiring[index]
                if held > 1:
                    self._retiring[index] = (held - 1, release)
                else:
                    del self._retiring[index]
                    threading.Thread(target=self._retire, args=(batcher, release),
                                     name=f"{self._model_name}-seq-retire", daemon=True).start()
                return
            requests = self._take_backlog(where)
            if requests is None:
                heapq.heappush(self._free, where)
            else:
                queue.extend(requests)

    @staticmethod
    def _retire(batcher: SequenceBatch, release: Release) -> None:
        """Stop a removed instance's batcher (its thread ends what it is doing), then release
        the instance."""
        batcher.stop()
        release(batcher.instance)

    def _take_backlog(self, where: _Slot) -> SlotQueue | None:
        """Lock held: the requests of the oldest backlogged sequence, which now holds `where`
        (a cancelled one fails whole); None if none is waiting."""
        while self._backlogs:
            backlog = self._backlogs.popleft()
            last = backlog.requests[-1]
            assert last is not None
            correlation_id = last.correlation_id
            if self._backlog_of.get(correlation_id) is backlog:
                del self._backlog_of[correlation_id]
            if any(r is not None and r.cancelled for r in backlog.requests):
                fail_all(backlog.requests, _sequence_cancelled())
                continue
            if not last.flags & SEQUENCE_END:
                self._slots[correlation_id] = where
            return backlog.requests
        return None

    def delaying(self, batcher: SequenceBatch, queued: int) -> bool:
        """Triton's DelayScheduler: hold back until the batchers together hold
        TRITONSERVER_DELAY_SCHEDULER requests, and the backlog
        TRITONSERVER_BACKLOG_DELAY_SCHEDULER."""
        with self._lock:
            self._queued_counts[self._index[id(batcher)]] = queued
            if sum(self._queued_counts) < self.delay_count:
                return True
            backlogged = sum(len(backlog.requests) for backlog in self._backlogs)
            return backlogged < self._backlog_delay_count

    def released(self, requests: Sequence[InferenceRequest]) -> None:
        """After execute returned (no lock held): what the backend released with
        REQUEST_RELEASE_RESCHEDULE is queued again in its sequence; any other request of an
        iterative sequence ends it, as Triton's IterativeSequencer does."""
        for request in requests:
            if not request.reschedulable:
                continue
            if request.rescheduled:
                request.rescheduled = False
                request.flags = 0
                request.queue_start_ns = time.perf_counter_ns()  # its next run's queue time
                request.compute_input_end_ns = request.compute_output_start_ns = 0
                try:
                    self.enqueue(request)
                except TritonError as err:  # e.g. the sequence went idle and lost its slot
                    log.error("Failed to release request: %s", err.message)
                    request.respond_error(err)
            else:
                request.reschedulable = False
                self._end_sequence(request.correlation_id)

    def _end_sequence(self, correlation_id: CorrelationId) -> None:
        with self._lock:
            slot = self._slots.pop(correlation_id, None)
            self._last_seen.pop(correlation_id, None)
        if slot is not None:  # (the reaper may have released it already)
            slot_index, batcher = slot
            self._batchers[batcher].enqueue(slot_index, None)

    # -- the reaper -----------------------------------------------------------------------------

    def _reap(self) -> None:
        """Release the slots of sequences idle past max_sequence_idle_microseconds."""
        idle = self._idle_s
        backlog_recheck = 0.05  # Triton's backlog_idle_wait_microseconds
        with self._lock:
            while not self._stopping:
                now = time.monotonic()
                wait = idle
                abandoned: list[tuple[CorrelationId, _Slot]] = []
                for correlation_id, seen in list(self._last_seen.items()):
                    remaining = idle - (now - seen)
                    if remaining > 0:
                        wait = min(wait, remaining)
                        continue
                    slot = self._slots.pop(correlation_id, None)
                    if slot is not None:
                        abandoned.append((correlation_id, slot))
                        del self._last_seen[correlation_id]
                    elif correlation_id in self._backlog_of:
                        wait = min(wait, backlog_recheck)
                    else:  # ended, or its END is queued
                        del self._last_seen[correlation_id]
                wait = min(wait, self._expire_backlogs(now))
                if abandoned:
                    self._lock.release()
                    try:
                        for correlation_id, (slot_index, batcher) in abandoned:
                            log.debug(  # Triton: verbose only
                                "sequence %s of model '%s' idle for over %d us: releasing its "
                                "slot", correlation_id, self._model_name, int(idle * 1e6),
                            )
                            self._batchers[batcher].enqueue(slot_index, None)
                    finally:
                        self._lock.acquire()
                    continue
                self._reaper_wake.wait(wait)

    def _expire_backlogs(self, now: float) -> float:
        """Lock held: fail the backlogged sequences whose deadline passed; seconds until the
        next deadline."""
        expired = [b for b in self._backlogs if b.expires <= now]
        for backlog in expired:
            self._backlogs.remove(backlog)
            for correlation_id, waiting in list(self._backlog_of.items()):
                if waiting is backlog:
                    del self._backlog_of[correlation_id]
            fail_all(backlog.requests, TritonError.unavailable(
                "timeout of the corresponding sequence has been expired"
            ))
        return min((b.expires for b in self._backlogs), default=math.inf) - now


def _sequence_cancelled() -> TritonError:
    # Triton answers CANCELLED without a message.
    return TritonError.cancelled("a request of the sequence was cancelled")
