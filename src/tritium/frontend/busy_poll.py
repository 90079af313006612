"""The event loop's busy poll: after an answer, with no request left in flight, the loop keeps
polling its sockets for `--busy-poll-us` before it sleeps.

Why: a client that waits for each answer before it asks again (concurrency 1) sends its next
request within tens of microseconds of the answer. If the server's core has gone idle in that
gap, taking the request first wakes the core: on a virtual machine that is an interrupt to a
halted virtual CPU, whose latency adds to every request (measured on the benchmark VM: a lone
add_sub client got 9-35 % more answers per second with the poll, at about the same CPU per
request). Triton's server keeps its core busier at concurrency 1 (its core measured 99 % busy
against Tritium's 81 % without the poll, its gRPC thread preempted twice per request);
Linux's `net.core.busy_poll` is the kernel's form of the idea, which loopback and most virtual
NICs do not offer.

The poll is bounded three ways, so that it costs nothing under load and little at rest: it
starts only when the loop's last in-flight request has been answered, it stops as soon as a
request is in flight again (the loop must then let the model's threads take the GIL), and it
yields the core (`sched_yield`) on every turn to anything else that is ready to run. At most
`--busy-poll-us` of CPU per answer; 0 turns it off. Installed by `tritium serve` only: programs
that embed the server (the in-process API) run their own loops and never poll.
"""

from __future__ import annotations

import asyncio
import os
import threading
from time import perf_counter_ns

# `tritium serve --busy-poll-us`'s default: beyond a local client's turnaround (under 50 us here).
DEFAULT_BUDGET_US = 100


class _Local(threading.local):
    # A class default: a thread without a poll finds None without raising AttributeError.
    poll: BusyPoll | None = None


_local = _Local()
_yield = getattr(os, "sched_yield", lambda: None)


class BusyPoll:
    """The requests in flight on one event loop (`inflight`, kept by the loop bridge) and the
    poll after each answer that leaves none."""

    __slots__ = ("_loop", "_budget_ns", "_deadline", "_polling", "inflight")

    def __init__(self, loop: asyncio.AbstractEventLoop, budget_us: int) -> None:
        self._loop = loop
        self._budget_ns = budget_us * 1000
        self._deadline = 0
        self._polling = False
        self.inflight = 0

    def answered(self) -> None:
        """A request's final answer has been handled (its reply written): poll if it was the
        last one in flight."""
        self.inflight -= 1
        if self.inflight == 0:
            self._deadline = perf_counter_ns() + self._budget_ns
            if not self._polling:
                self._polling = True
                self._loop.call_soon(self._poll)

    def _poll(self) -> None:
        # A pending callback makes the loop's next wait for I/O return at once: rescheduling
        # this one is the poll; reading a request puts one in flight, which ends it.
        if self.inflight or perf_counter_ns() > self._deadline:
            self._polling = False
            return
        _yield()
        self._loop.call_soon(self._poll)


def install(loop: asyncio.AbstractEventLoop, budget_us: int) -> None:
    """Poll after answers on `loop`, which runs on this thread (`budget_us` 0: never)."""
    _local.poll = BusyPoll(loop, budget_us) if budget_us > 0 else None


def current() -> BusyPoll | None:
    """The busy poll of the loop running on this thread, if `install` set one up."""
    return _local.poll


__all__ = ["DEFAULT_BUDGET_US", "BusyPoll", "current", "install"]
