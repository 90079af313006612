"""The default scheduler hands an instance that runs queued requests in one go
(`can_execute_each`, the python backend) a share of the queue only while executions are short.

Requests taken are committed to: a server exiting answers only those still queued UNAVAILABLE.
A model whose execution takes 50 ms must therefore take queued requests one at a time (as
Triton's scheduler runs them), while a fast one still takes several per wake-up.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from tritium.backend.handles import ExecutionPolicy
from tritium.scheduler.default import DefaultScheduler


class _Handle:
    kind = "KIND_CPU"
    device_id = 0


class _Instance:
    """Records the size of every execution; each request takes `seconds` to run."""

    handle = _Handle()
    can_execute_each = True

    def __init__(self, seconds: float, gate: threading.Event) -> None:
        self.seconds = seconds
        self.gate = gate
        self.sizes: list[int] = []
        self.done = threading.Semaphore(0)

    def execute(self, requests: Sequence[object]) -> None:
        self.execute_each(requests)

    def execute_each(self, requests: Sequence[object]) -> None:
        self.gate.wait()
        self.sizes.append(len(requests))
        for _ in requests:
            time.sleep(self.seconds)
            self.done.release()


class _Request:
    """What the scheduler reads of a request before running it."""

    cancelled = False


def _sizes(seconds: float, count: int) -> list[int]:
    """Queue `count` requests behind a held first one and return the executions' sizes."""
    gate = threading.Event()
    instance = _Instance(seconds, gate)
    scheduler = DefaultScheduler("m", [instance], ExecutionPolicy.BLOCKING)
    scheduler.start()
    try:
        scheduler.enqueue(_Request())  # type: ignore[arg-type]
        time.sleep(0.05)  # the first is taken alone, before the others queue
        for _ in range(count):
            scheduler.enqueue(_Request())  # type: ignore[arg-type]
        gate.set()
        for _ in range(count + 1):
            assert instance.done.acquire(timeout=30)
    finally:
        scheduler.stop()
    return instance.sizes


def test_slow_executions_take_queued_requests_one_at_a_time() -> None:
    sizes = _sizes(0.05, 6)
    assert sizes == [1] * 7, sizes


def test_fast_executions_take_their_share_in_one_go() -> None:
    sizes = _sizes(0.0, 40)
    assert max(sizes) > 1, sizes
    assert max(sizes) <= 16, sizes
    assert sum(sizes) == 41
