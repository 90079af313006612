"""Large infer bodies decoded off the event loop, one at a time.

Decoding a JSON body of tens of megabytes, or inflating a small gzip body to one, takes long
enough that on the event loop every other client would wait for it (a 60 MB JSON body: 1-6 s).
Such bodies are decoded on one thread of their own, and `json_spans` reads their tensor data in
slices so that the GIL changes hands meanwhile; the request then goes on on the loop. One
thread, so that what several such bodies hold while decoded is bounded by one at a time; the
others wait their turn in its queue (their bytes are already held, within the size limit).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from ...errors import TritonError
from .json_spans import BULK
from .request import parse_header_length

T = TypeVar("T")

_DECODER = ThreadPoolExecutor(1, thread_name_prefix="tritium-http-decode")


def is_bulky(body: bytes, content_encoding: str | None, header_length_text: str | None,
             header_length: Callable[[str | None, int], int] = parse_header_length) -> bool:
    """Whether decoding a body belongs off the loop: it is compressed (a few kilobytes may
    inflate to the size limit; compressed requests are rare), or its JSON part is large (a
    body shorter than that is decided by its length alone)."""
    if content_encoding == "gzip" or content_encoding == "deflate":
        return True
    if len(body) < BULK:
        return False
    try:
        return header_length(header_length_text, len(body)) >= BULK
    except TritonError:  # refused by the decoder at once
        return False


def decode_later(decode: Callable[[], T], loop: asyncio.AbstractEventLoop,
                 then: Callable[[Future[T]], None]) -> None:
    """Run `decode` on the decoding thread; `then` gets its finished future on `loop`."""

    def settled(outcome: Future[T]) -> None:
        try:
            loop.call_soon_threadsafe(then, outcome)
        except RuntimeError:  # the loop is closed: the server has exited, nobody to answer
            pass

    _DECODER.submit(decode).add_done_callback(settled)


class Decoding:
    """What a connection waits on while its body is decoded off the loop (`conn.pending`):
    marked cancelled if the client goes away meanwhile."""

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False
