"""handoff: a loop's hand-offs wait for the end of its turn only while other requests await
their answers and only inside the input handling that defers; a lone request goes at once.
The other way, a model's thread holds the loop wake-ups of an execution's closing answers only
where it releases them itself (a default scheduler's thread), and releases them in order."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from tritium import handoff


def test_without_deferral_the_put_is_immediate() -> None:
    queued: list[str] = []
    handoff.hand_off(queued.append, "a")
    assert queued == ["a"]


def test_a_lone_request_goes_at_once_even_while_deferring() -> None:
    async def main() -> list[str]:
        deferral = handoff.Deferral(asyncio.get_running_loop().call_soon)
        deferral.awaiting = 1  # just this one
        queued: list[str] = []
        outer = handoff.deferring(deferral)
        try:
            handoff.hand_off(queued.append, "a")
        finally:
            handoff.deferring(outer)
        return queued

    assert asyncio.run(main()) == ["a"]


def test_requests_of_one_turn_are_put_together_after_it() -> None:
    async def main() -> tuple[list[str], list[str], list[str]]:
        deferral = handoff.Deferral(asyncio.get_running_loop().call_soon)
        deferral.awaiting = 3
        queued: list[str] = []
        outer = handoff.deferring(deferral)
        try:
            handoff.hand_off(queued.append, "a")
            handoff.hand_off(queued.append, "b")
            during = list(queued)
        finally:
            handoff.deferring(outer)
        handoff.hand_off(queued.append, "outside")  # not input handling: at once
        after_handling = list(queued)
        await asyncio.sleep(0)
        return during, after_handling, queued

    during, after_handling, final = asyncio.run(main())
    assert during == []
    assert after_handling == ["outside"]
    assert final == ["outside", "a", "b"]
    assert handoff.current() is None


def _on_thread(body: Callable[[], None]) -> None:
    """`body` on a thread of its own (the hold is the calling thread's)."""
    failures: list[BaseException] = []

    def run() -> None:
        try:
            body()
        except BaseException as exc:
            failures.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert not failures, failures


def test_a_thread_that_does_not_release_wakes_at_once_even_when_asked_to_hold() -> None:
    woken: list[str] = []

    def body() -> None:
        handoff.hold_wakeups()  # e.g. a dynamic batcher's thread running the python backend
        handoff.wake(woken.append, "a")
        assert woken == ["a"]

    _on_thread(body)


def test_held_wakeups_wait_for_the_release_and_keep_their_order() -> None:
    woken: list[str] = []

    def body() -> None:
        handoff.releases_wakeups()
        handoff.wake(woken.append, "before the hold")
        handoff.hold_wakeups()
        handoff.wake(woken.append, "a")
        handoff.wake(woken.append, "b")
        assert woken == ["before the hold"]
        handoff.release_wakeups()
        assert woken == ["before the hold", "a", "b"]
        handoff.wake(woken.append, "after")  # released: no longer held
        assert woken[-1] == "after"
        handoff.release_wakeups()  # nothing held: nothing happens
        assert len(woken) == 4

    _on_thread(body)


def test_the_hold_is_the_holding_threads_alone() -> None:
    woken: list[str] = []
    elsewhere = threading.Event()

    def other() -> None:
        handoff.wake(woken.append, "other thread")
        elsewhere.set()

    def body() -> None:
        handoff.releases_wakeups()
        handoff.hold_wakeups()
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert woken == ["other thread"]
        handoff.release_wakeups()

    _on_thread(body)
    assert elsewhere.is_set()
