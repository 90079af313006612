"""handoff: a loop's hand-offs wait for the end of its turn only while other requests await
their answers and only inside the input handling that defers; a lone request goes at once."""

from __future__ import annotations

import asyncio

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
