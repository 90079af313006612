"""The dynamic batcher's queue: Triton's PriorityQueue of per-level PolicyQueues.

Each priority level (1 is served first) has its own queue policy: `max_queue_size` refuses a
request when the level is full, a timeout (the policy's default, or the request's own `timeout`
when `allow_timeout_override`) either rejects an expired request or, with `timeout_action:
DELAY`, moves it behind the requests of its level that are still in time. Without
`priority_levels` there is one level and the request's priority is ignored.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from tritonclient.grpc import model_config_pb2 as mc

from ..errors import TritonError
from ..request import InferenceRequest, log_prefix


class PolicyQueue:
    """One priority level: the requests in time, then the delayed ones (both FIFO)."""

    __slots__ = ("max_size", "timeout_ns", "allow_override", "delay", "queue", "delayed",
                 "timed")

    def __init__(self, policy: mc.ModelQueuePolicy) -> None:
        self.max_size = policy.max_queue_size
        self.timeout_ns = policy.default_timeout_microseconds * 1000
        self.allow_override = policy.allow_timeout_override
        self.delay = policy.timeout_action == mc.ModelQueuePolicy.DELAY
        # (request, deadline in perf_counter ns or 0 for none)
        self.queue: deque[tuple[InferenceRequest, int]] = deque()
        self.delayed: deque[InferenceRequest] = deque()
        # How many queued requests have a deadline: none (the usual case) skips `expire`.
        self.timed = 0

    def __len__(self) -> int:
        return len(self.queue) + len(self.delayed)

    def enqueue(self, request: InferenceRequest) -> None:
        if self.max_size and len(self) >= self.max_size:
            raise TritonError.unavailable(f"{log_prefix(request.id)}Exceeds maximum queue size")
        timeout_ns = self.timeout_ns
        if self.allow_override and request.timeout_us:
            timeout_ns = request.timeout_us * 1000
        deadline = request.queue_start_ns + timeout_ns if timeout_ns else 0
        self.queue.append((request, deadline))
        if deadline:
            self.timed += 1

    def expire(self, now_ns: int, rejected: list[InferenceRequest]) -> int:
        """Apply the timeout policy to the requests past their deadline; return the closest
        deadline still ahead (0 if none)."""
        closest = 0
        if not self.timed:
            return closest
        kept: deque[tuple[InferenceRequest, int]] = deque()
        for request, deadline in self.queue:
            if deadline and deadline <= now_ns:
                self.timed -= 1
                if self.delay:
                    self.delayed.append(request)
                else:
                    rejected.append(request)
                continue
            kept.append((request, deadline))
            if deadline and (not closest or deadline < closest):
                closest = deadline
        self.queue = kept
        return closest

    def __iter__(self) -> Iterator[InferenceRequest]:
        for request, _ in self.queue:
            yield request
        yield from self.delayed

    def take(self, count: int) -> list[InferenceRequest]:
        """Remove and return the first `count` requests in serving order."""
        taken: list[InferenceRequest] = []
        while count and self.queue:
            request, deadline = self.queue.popleft()
            if deadline:
                self.timed -= 1
            taken.append(request)
            count -= 1
        while count and self.delayed:
            taken.append(self.delayed.popleft())
            count -= 1
        return taken


class PriorityQueue:
    def __init__(self, batching: mc.ModelDynamicBatching) -> None:
        self._default_level = batching.default_priority_level
        self._max_level = batching.priority_levels
        if self._max_level:
            self._levels = {
                level: PolicyQueue(
                    batching.priority_queue_policy.get(level, batching.default_queue_policy)
                )
                for level in range(1, self._max_level + 1)
            }
        else:
            self._levels = {0: PolicyQueue(batching.default_queue_policy)}
        self._ordered = [self._levels[k] for k in sorted(self._levels)]
        self._size = 0

    def __len__(self) -> int:
        return self._size

    @property
    def may_time_out(self) -> bool:
        """Whether any level gives requests a deadline (its own or the request's)."""
        return any(level.timeout_ns or level.allow_override for level in self._ordered)

    def enqueue(self, request: InferenceRequest) -> None:
        """Queue `request` at its level (Triton: priority 0 or above the highest level means
        the default level); raises UNAVAILABLE when the level is full."""
        level = 0
        if self._max_level:
            level = request.priority
            if level == 0 or level > self._max_level:
                level = self._default_level
        self._levels[level].enqueue(request)
        self._size += 1

    def expire(self, now_ns: int) -> tuple[list[InferenceRequest], int]:
        """Rejected requests (taken out of the queue) and the closest deadline still ahead."""
        rejected: list[InferenceRequest] = []
        closest = 0
        for level in self._ordered:
            deadline = level.expire(now_ns, rejected)
            if deadline and (not closest or deadline < closest):
                closest = deadline
        self._size -= len(rejected)
        return rejected, closest

    def __iter__(self) -> Iterator[InferenceRequest]:
        for level in self._ordered:
            yield from level

    def take(self, count: int) -> list[InferenceRequest]:
        taken: list[InferenceRequest] = []
        for level in self._ordered:
            if len(taken) == count:
                break
            taken.extend(level.take(count - len(taken)))
        self._size -= len(taken)
        return taken
