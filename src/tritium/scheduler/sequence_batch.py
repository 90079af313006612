"""The per-instance half of the sequence batcher: sequence slots and how they become batches.

Each instance has a fixed number of sequence slots; a sequence owns one slot from its START to
its END, and its requests queue there in order. Triton's two strategies decide what runs:

- `direct` (DirectSequenceBatch): each execution takes the next request of every slot, slot i
  at batch position i; a slot with nothing to send gets a null request (controls "not ready"),
  so that the model can keep per-position state. `max_queue_delay_microseconds` with
  `minimum_slot_utilization` may hold a batch back for more slots to fill.
- `oldest` (OldestSequenceBatch): a slot sends its next request only once the previous one
  finished; sent requests of different sequences batch together dynamically (up to
  max_batch_size, waiting at most `max_queue_delay_microseconds` for a preferred size).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Protocol

import numpy as np
from tritonclient.grpc import model_config_pb2 as mc

from ..errors import TritonError
from ..request import SEQUENCE_END, SEQUENCE_START, InferenceRequest, ResponseSender
from ..tensor import Tensor
from .base import ExecutionInstance
from .delay_hook import RECHECK_S
from .equal_inputs import RequiredEqualInputs
from .sequence_control import SequenceControls
from .sequence_state import ImplicitState, SequenceValues

# What a slot queue holds: a request, or None, the reaper's "release this slot" marker.
SlotQueue = deque["InferenceRequest | None"]


class SlotOwner(Protocol):
    """What a batcher asks of the scheduler: give a freed slot to a backlogged sequence, and
    take back the requests an execution released."""

    # TRITONSERVER_DELAY_SCHEDULER (delay_hook); 0: not set.
    delay_count: int

    def delaying(self, batcher: SequenceBatch, queued: int) -> bool:
        """Whether batches stay held back, `batcher` now holding `queued` requests."""

    def released(self, requests: list[InferenceRequest]) -> None:
        """Execute returned: requeue what the backend rescheduled, end iterative sequences."""

    def release_slot(
        self, batcher: SequenceBatch, slot: int, queue: SlotQueue, cancelled: bool
    ) -> None:
        """The sequence in `slot` ended, was abandoned or (`cancelled`: its request at the
        head of `queue` was) cancelled: fail what is left in `queue`, then refill `queue` from
        the backlog or mark the slot free."""


class SequenceBatch:
    """Sequence slots of one instance; subclasses decide when slot requests execute."""

    def __init__(
        self,
        owner: SlotOwner,
        instance: ExecutionInstance,
        slot_count: int,
        controls: SequenceControls,
        states: ImplicitState,
        config: mc.ModelConfig,
    ) -> None:
        self.owner = owner
        self.instance = instance
        self.slot_count = slot_count
        self._controls = controls
        self._states = states
        self._queues: list[SlotQueue] = [deque() for _ in range(slot_count)]
        self._values: list[SequenceValues | None] = [None] * slot_count
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._stopping = False
        self._thread: threading.Thread | None = None
        # How long the thread may sleep before the batch it holds back is due (None: until
        # woken).
        self._wait_s: float | None = None
        self._max_batch = max(1, config.max_batch_size)
        self._equal = RequiredEqualInputs(config)
        self._configure(config)

    def _configure(self, config: mc.ModelConfig) -> None:
        """Read the strategy's own settings."""

    def enqueue(self, slot: int, request: InferenceRequest | None) -> None:
        with self._wake:
            self._queues[slot].append(request)
            self._on_enqueue(slot)
            self._wake.notify_all()

    def _on_enqueue(self, slot: int) -> None:
        """Called with the lock held after a request joined `slot`'s queue."""

    def prepare(self, request: InferenceRequest, slot: int) -> None:
        """Controls and implicit state for a request about to run in `slot`."""
        self._controls.apply(request)
        if self._states:
            if request.flags & SEQUENCE_START or self._values[slot] is None:
                self._values[slot] = self._states.initial()
            values = self._values[slot]
            assert values is not None
            self._states.attach(request, values)

    def release(self, slot: int, cancelled: bool = False) -> None:
        """Lock held: the slot's sequence is over; the scheduler refills or frees it."""
        self._values[slot] = None
        self.owner.release_slot(self, slot, self._queues[slot], cancelled)

    def start(self, name: str) -> None:
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Run everything queued, then stop the thread."""
        with self._wake:
            self._stopping = True
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        held = self.owner.delay_count > 0
        while True:
            if held:  # Triton's testing hook (delay_hook), before any batch
                held = self._held()
                if held:
                    time.sleep(RECHECK_S)
                    continue
            with self._wake:
                batch = self._next_batch()
                while batch is None:
                    if self._stopping and self._drained():
                        return
                    self._wake.wait(self._wait_s)
                    batch = self._next_batch()
            self._execute(batch)

    def _held(self) -> bool:
        """Whether TRITONSERVER_DELAY_SCHEDULER still holds batches back: fewer requests are
        queued in the model's slots than it says (or the backlog holds fewer than
        TRITONSERVER_BACKLOG_DELAY_SCHEDULER)."""
        with self._wake:
            if self._stopping:
                return False
            queued = sum(len(queue) for queue in self._queues)
        return self.owner.delaying(self, queued)

    def _next_batch(self) -> list | None:
        """Lock held: what to execute now, or None (then sleep `_wait_s`)."""
        raise NotImplementedError

    def _execute(self, batch: list) -> None:
        raise NotImplementedError

    def _drained(self) -> bool:
        """Lock held: nothing is left to run."""
        return not any(self._queues)


class DirectSequenceBatch(SequenceBatch):
    def _configure(self, config: mc.ModelConfig) -> None:
        direct = config.sequence_batching.direct
        self._delay_ns = direct.max_queue_delay_microseconds * 1000
        self._min_utilization = direct.minimum_slot_utilization

    def _execute(self, batch: list[InferenceRequest]) -> None:
        self.instance.execute(batch)
        self.owner.released(batch)

    def _next_batch(self) -> list[InferenceRequest] | None:
        self._wait_s = None
        queues = self._queues
        top = -1
        ready = 0
        oldest = None
        first: tuple[InferenceRequest, dict[str, Tensor], list] | None = None
        for slot, queue in enumerate(queues):
            if queue and queue[0] is None:  # the reaper released an abandoned sequence
                queue.popleft()
                self.release(slot)
            elif queue and queue[0] is not None and queue[0].cancelled:  # ends its sequence
                self.release(slot, cancelled=True)
            if queue:
                head = queue[0]
                assert head is not None
                if first is None:
                    # Null requests copy a real one, as it is before controls are added.
                    first = (head, dict(head.inputs), list(head.requested_outputs))
                ready += 1
                top = slot
                if oldest is None or head.queue_start_ns < oldest:
                    oldest = head.queue_start_ns
        if first is None:
            return None
        if self._delay_ns and self._min_utilization and not self._stopping:
            waited = time.perf_counter_ns() - (oldest or 0)
            if waited <= self._delay_ns and ready / self._max_batch < self._min_utilization:
                self._wait_s = (self._delay_ns - waited) / 1e9
                return None
        batch: list[InferenceRequest] = []
        template: InferenceRequest | None = None
        equal = self._equal
        required = equal.key(first[0]) if equal.active else None
        for slot in range(top + 1):
            queue = queues[slot]
            # Triton's null request keeps the other sequences at their slot positions; a
            # request whose shapes differ from the first one's waits for a later batch.
            head = queue[0] if queue else None
            if head is None or (equal.active and not equal.match(head, first[0], required)):
                if template is None:
                    template = _null_template(*first)
                batch.append(self._null_request(template, slot))
                continue
            request = queue.popleft()
            assert request is not None
            self.prepare(request, slot)
            batch.append(request)
            if request.flags & SEQUENCE_END:
                self.release(slot)
        return batch

    def _null_request(self, template: InferenceRequest, slot: int) -> InferenceRequest:
        null = InferenceRequest(template.model_name, template.model_version)
        null.inputs = dict(template.inputs)
        null.requested_outputs = list(template.requested_outputs)
        null.batch_size = 1
        null.response_sender = ResponseSender(_discard)
        null.collects_statistics = False
        self._controls.apply(null, ready=False)
        values = self._values[slot]
        if self._states:
            # Any live sequence's state gives the shapes; the filler works on a copy.
            live = values or next((v for v in self._values if v is not None), None)
            self._states.attach(null, self._states.null_values(live or self._states.initial()))
        return null


def _null_template(
    like: InferenceRequest, inputs: dict[str, Tensor], outputs: list
) -> InferenceRequest:
    """Zero inputs of the shapes and types of `like`'s own `inputs`, and its `outputs`."""
    template = InferenceRequest(like.model_name, like.model_version)
    for name, tensor in inputs.items():
        data = np.zeros_like(tensor.data)
        if tensor.datatype == "BYTES":
            data[...] = b""
        template.inputs[name] = Tensor(name, tensor.datatype, tensor.shape, data)
    template.requested_outputs = outputs
    return template


def _discard(_response: object, _flags: int) -> None:
    """Responses to null requests go nowhere, as in Triton."""


class OldestSequenceBatch(SequenceBatch):
    def _configure(self, config: mc.ModelConfig) -> None:
        oldest = config.sequence_batching.oldest
        self._target = max(oldest.preferred_batch_size, default=self._max_batch)
        self._delay_ns = oldest.max_queue_delay_microseconds * 1000
        self._in_flight = [False] * self.slot_count
        # Requests issued to the dynamic batch, oldest first, with their slot and the time
        # they were issued (what the queue delay counts from).
        self._issued: deque[tuple[int, InferenceRequest, int]] = deque()

    def _on_enqueue(self, slot: int) -> None:
        if not self._in_flight[slot]:
            self._next_of(slot)

    def _next_of(self, slot: int) -> None:
        """Lock held: Triton's CompleteAndNext: issue the slot's next request, releasing the
        slot when the sequence ends (its backlog successor then waits for the issued END)."""
        queue = self._queues[slot]
        retry = True
        while retry:
            retry = False
            self._in_flight[slot] = False
            release = False
            if queue:
                request = queue.popleft()
                if request is None:
                    release = True
                elif request.cancelled:
                    queue.appendleft(request)
                    self.release(slot, cancelled=True)
                    retry = bool(queue)
                    continue
                else:
                    release = bool(request.flags & SEQUENCE_END)
                    self.prepare(request, slot)
                    self._in_flight[slot] = True
                    self._issued.append((slot, request, time.perf_counter_ns()))
            if release:
                self.release(slot)
                retry = bool(queue) and not self._in_flight[slot]

    def _execute(self, batch: list[tuple[int, InferenceRequest, int]]) -> None:
        requests = [request for _, request, _ in batch]
        self.instance.execute(requests)
        self.owner.released(requests)
        with self._wake:
            for slot, _, _ in batch:
                self._next_of(slot)

    def _drained(self) -> bool:
        return super()._drained() and not self._issued

    def _held(self) -> bool:
        """`oldest` batches through a dynamic batch of its own: held back until that many
        requests are issued, as Triton's dynamic batcher is."""
        with self._wake:
            return not self._stopping and len(self._issued) < self.owner.delay_count

    def _next_batch(self) -> list[tuple[int, InferenceRequest, int]] | None:
        self._wait_s = None
        issued = self._issued
        if not issued:
            return None
        alike = self._alike(len(issued))
        # A request of another shape ends the batch: it goes now, without waiting.
        if alike == len(issued) < self._target and self._delay_ns and not self._stopping:
            waited = time.perf_counter_ns() - issued[0][2]
            if waited < self._delay_ns:
                self._wait_s = (self._delay_ns - waited) / 1e9
                return None
        return [issued.popleft() for _ in range(min(alike, self._max_batch))]

    def _alike(self, count: int) -> int:
        """How many of the first `count` issued requests may batch with the oldest: up to the
        first whose shapes differ, as Triton's dynamic batcher stops there."""
        equal = self._equal
        if not equal.active:
            return count
        first = self._issued[0][1]
        required = equal.key(first)
        for index in range(1, count):
            if not equal.match(self._issued[index][1], first, required):
                return index
        return count


def fail_all(requests: SlotQueue, error: TritonError) -> None:
    for request in requests:
        if request is not None:
            request.respond_error(error)
    requests.clear()
