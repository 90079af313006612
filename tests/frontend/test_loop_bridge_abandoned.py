"""A stream whose reader went away: `loop_bridge.responses` marks the request cancelled and
drops what the model still sends. Before, every later response was queued for nobody (a
decoupled model sending in a loop grew the server by ~900 MB in 20 s)."""

from __future__ import annotations

import asyncio
import gc
import weakref

from tritium.frontend import loop_bridge
from tritium.request import InferenceRequest, InferenceResponse


class _Tracked(InferenceResponse):
    """A response a weak reference can watch."""


def test_responses_after_the_reader_left_are_dropped() -> None:
    async def scenario() -> tuple[bool, int]:
        delivered = []
        request = InferenceRequest(model_name="m")
        stream = loop_bridge.responses(lambda _req, deliver: delivered.append(deliver), request)
        first = asyncio.ensure_future(stream.__anext__())
        await asyncio.sleep(0)
        delivered[0](InferenceResponse(), 0)
        await first
        await stream.aclose()
        later = [_Tracked() for _ in range(100)]
        refs = [weakref.ref(response) for response in later]
        for response in later:
            delivered[0](response, 0)
        del later, response
        await asyncio.sleep(0.01)  # the loop runs the deliveries
        gc.collect()
        return request.cancelled, sum(ref() is not None for ref in refs)

    cancelled, kept = asyncio.run(scenario())
    assert cancelled
    assert kept == 0, f"{kept} responses kept for a reader that left"
