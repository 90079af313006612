"""Hand-offs of requests to the threads that run models, made together at the end of an event
loop's turn while the loop has other requests in flight.

Queuing a request wakes a model's thread. When the server's event loop reads several requests
in one turn (eight HTTP connections readable at once), waking the thread at the first one lets
it run between the loop's reads (each socket read releases the GIL), take that one request
alone and sleep again: a wake-up and a stub round trip per request. A frontend that wraps its
input handling in `deferring(its loop's Deferral)` has its hand-offs made by one callback after
the turn's input is handled: the model's thread wakes once and finds them all queued (the
default scheduler then runs them in one exchange, `model_instance_execute_each`).

The HTTP/1.1 frontend defers; gRPC does not: its requests share one connection, whose frames
are handled in one go already, and deferring there measured 15 % slower at c=8.

A lone request is handed off at once (the callback would cost it one more loop iteration and
gain nothing): the loop bridge counts the requests awaiting their answers (`awaiting`). Only a
frontend's input handling defers; anything else on the loop thread, and every other thread,
hands off at once, so that nothing which then blocks on the answer can wait on its own
deferred hand-off.

The other way, answers: a model's thread wakes a frontend's event loop for each final answer
(`wake`, used by the loop bridge). The python backend answers as its execute ends; the woken
loop takes the GIL at the model's thread's next system call (its own wake-up write, often) and
encodes and writes the answer while that thread is still on its way to the instance's next
execution, which waits behind it. So a default scheduler's thread, which runs one execution
after another (`releases_wakeups`), holds the wake-ups of an execution's closing answers
(`hold_wakeups`, called by the backend before them) until the next execution is under way
(the python backend releases them once the stub has it) or until it waits for anything: for
work, a rate limiter, a restarting stub (`release_wakeups`). The answer itself goes at once to
the request's statistics and the frontend's delivery chain; only the loop's wake-up waits, for
tens of microseconds. (In Triton an instance is free as soon as execute returns; sending the
responses is the frontends' threads' business.) Any other thread wakes the loop at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class _Local(threading.local):
    # A class default, so that a thread that never deferred finds None without the
    # AttributeError a missing attribute raises (and getattr's default swallows) each time.
    deferral: Deferral | None = None
    # A thread that releases held wake-ups itself (a default scheduler's), and those it holds.
    releases: bool = False
    held: list[tuple[Callable[..., Any], tuple[Any, ...]]] | None = None


_local = _Local()


class Deferral:
    """The hand-offs one event loop defers (`schedule` is the loop's `call_soon`), and how many
    of its frontend's requests await their answers."""

    __slots__ = ("_schedule", "_pending", "awaiting")

    def __init__(self, schedule: Callable[[Callable[[], None]], Any]) -> None:
        self._schedule = schedule
        self._pending: list[tuple[Callable[[Any], None], Any]] = []
        self.awaiting = 0

    def add(self, put: Callable[[Any], None], item: Any) -> None:
        pending = self._pending
        if not pending:
            self._schedule(self._flush)
        pending.append((put, item))

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        for put, item in pending:
            put(item)


def deferring(deferral: Deferral | None) -> Deferral | None:
    """Make this thread's hand-offs go through `deferral` (None: at once), until the next
    call; returns the one before, for the caller to restore."""
    previous = _local.deferral
    _local.deferral = deferral
    return previous


def current() -> Deferral | None:
    """The deferral this thread's hand-offs go through now, if any."""
    return _local.deferral


def hand_off(put: Callable[[Any], None], item: Any) -> None:
    """`put(item)` now, or at the end of the loop's turn while this thread defers and other
    requests than this one await their answers."""
    deferral = _local.deferral
    if deferral is None or deferral.awaiting <= 1:
        put(item)
    else:
        deferral.add(put, item)


def wake(call: Callable[..., Any], *args: Any) -> None:
    """`call(*args)` (a loop's `call_soon_threadsafe`, which must not raise) now, or, while
    this thread holds its wake-ups, when it releases them (in order)."""
    held = _local.held
    if held is None:
        call(*args)
    else:
        held.append((call, args))


def releases_wakeups() -> None:
    """This thread releases held wake-ups (`release_wakeups`) before it starts an execution,
    waits for work or ends: only such a thread holds them."""
    _local.releases = True


def hold_wakeups() -> None:
    """Hold this thread's wake-ups until it releases them; nothing on a thread that does not
    (see `releases_wakeups`)."""
    if _local.releases and _local.held is None:
        _local.held = []


def release_wakeups() -> None:
    """Make the wake-ups this thread holds, and hold no more."""
    held = _local.held
    if held is not None:
        _local.held = None
        for call, args in held:
            call(*args)
