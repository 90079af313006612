"""The dynamic batcher's queue: Triton's PriorityQueue of per-level PolicyQueues.

Each priority level (1 is served first) has its own queue policy: `max_queue_size` refuses a
request when the level is full, a timeout (the policy's default, or the request's own `timeout`
when `allow_timeout_override` and it is shorter) either rejects an expired request or, with
`timeout_action: DELAY`, moves it behind the requests of its level that are still in time.
Without `priority_levels` there is one level and the request's priority is ignored.

As in Triton, a level costs nothing until a request reaches it: only the levels named in
`priority_queue_policy` exist from the start, a default-policy level is made by its first request
and dropped again once it is empty (`priority_levels` may be 2**64-1).
"""

from __future__ import annotations

from bisect import insort
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
        # Triton (PolicyQueue::Enqueue): the request's own timeout only shortens the default,
        # so with no default timeout a request never times out.
        if self.allow_override and 0 < request.timeout_us * 1000 < timeout_ns:
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
    """The levels in serving order. `_levels` holds the existing ones, `_order` their numbers
    sorted; `_kept` the levels that stay while empty (those with a policy of their own)."""

    def __init__(self, batching: mc.ModelDynamicBatching) -> None:
        self._default_level = batching.default_priority_level
        self._max_level = batching.priority_levels
        self._default_policy = batching.default_queue_policy
        if self._max_level:
            policies = dict(batching.priority_queue_policy)
        else:
            policies = {0: batching.default_queue_policy}
        self._levels = {level: PolicyQueue(policy) for level, policy in policies.items()}
        self._order = sorted(self._levels)
        self._kept = frozenset(self._levels)
        self._may_time_out = any(
            p.default_timeout_microseconds
            for p in (batching.default_queue_policy, *policies.values())
        )
        self._size = 0

    def __len__(self) -> int:
        return self._size

    @property
    def may_time_out(self) -> bool:
        """Whether any level gives requests a deadline (a request's own timeout only shortens
        its level's, so a level without one never does)."""
        return self._may_time_out

    def enqueue(self, request: InferenceRequest) -> None:
        """Queue `request` at its level (Triton: priority 0 or above the highest level means
        the default level); raises UNAVAILABLE when the level is full."""
        level = 0
        if self._max_level:
            level = request.priority
            if level == 0 or level > self._max_level:
                level = self._default_level
        queue = self._levels.get(level)
        if queue is None:
            queue = self._levels[level] = PolicyQueue(self._default_policy)
            insort(self._order, level)
        queue.enqueue(request)  # a new level is empty: never full
        self._size += 1

    def _is_spent(self, level: int, queue: PolicyQueue) -> bool:
        return not len(queue) and level not in self._kept

    def _drop(self, spent: list[int]) -> None:
        for level in spent:
            del self._levels[level]
            self._order.remove(level)

    def expire(self, now_ns: int) -> tuple[list[InferenceRequest], int]:
        """Rejected requests (taken out of the queue) and the closest deadline still ahead."""
        rejected: list[InferenceRequest] = []
        closest = 0
        spent: list[int] = []
        for level in self._order:
            queue = self._levels[level]
            deadline = queue.expire(now_ns, rejected)
            if deadline and (not closest or deadline < closest):
                closest = deadline
            if self._is_spent(level, queue):
                spent.append(level)
        self._drop(spent)
        self._size -= len(rejected)
        return rejected, closest

    def __iter__(self) -> Iterator[InferenceRequest]:
        for level in self._order:
            yield from self._levels[level]

    def take(self, count: int) -> list[InferenceRequest]:
        taken: list[InferenceRequest] = []
        spent: list[int] = []
        for level in self._order:
            if len(taken) == count:
                break
            queue = self._levels[level]
            taken.extend(queue.take(count - len(taken)))
            if self._is_spent(level, queue):
                spent.append(level)
        self._drop(spent)
        self._size -= len(taken)
        return taken
