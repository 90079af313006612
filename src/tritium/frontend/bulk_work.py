"""Work too long for the event loop, done on one thread of its own, one piece at a time.

Decoding a large JSON body, inflating a compressed body or message, deflating a large answer
(zlib at its default level: tens of milliseconds a megabyte), writing a large JSON answer, and
decoding or encoding a BYTES tensor of many elements (about half a microsecond per element, in
Python: a tensor of 4 million short strings takes 2-4 s) would make every other client of the
server wait if done on the loop. The
HTTP and gRPC frontends hand such work to this thread and carry on with the request on the loop
once it is done. One thread, so that what several such pieces hold while being worked on is
bounded by one at a time; the others wait their turn in its queue (their bytes are already
held, within the size limits). The thread holds the interpreter lock only in turns, so the loop
keeps answering other clients meanwhile. Small requests never come here: the hand-off costs a
thread switch each way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from ..tensor import Tensor, element_count

T = TypeVar("T")

_WORKER = ThreadPoolExecutor(1, thread_name_prefix="tritium-bulk")

# A BYTES tensor of this many elements or more (some 8 ms of work on the loop) is decoded and
# encoded on the thread.
BYTES_BULK_ELEMENTS = 16384
# The size from which raw BYTES data may hold that many elements (4 bytes at least each).
BYTES_BULK_SIZE = 4 * BYTES_BULK_ELEMENTS
# An answer of this many bytes or more is deflated on the thread (a millisecond or more of
# zlib); zlib lets go of the interpreter lock while it works.
DEFLATE_BULK_SIZE = 64 * 1024
# A compressed message of this many bytes or more is inflated on the thread: deflate packs up to
# about a thousand bytes into one, so a smaller one makes a megabyte at most (a millisecond).
INFLATE_BULK_SIZE = 1024


def later(work: Callable[[], T], loop: asyncio.AbstractEventLoop,
          then: Callable[[Future[T]], None]) -> None:
    """Run `work` on the thread; `then` gets its finished future on `loop`."""

    def settled(outcome: Future[T]) -> None:
        try:
            loop.call_soon_threadsafe(then, outcome)
        except RuntimeError:  # the loop is closed: the server has exited, nobody to answer
            pass

    _WORKER.submit(work).add_done_callback(settled)


async def off_loop(work: Callable[[], T]) -> Callable[[], T]:
    """Run `work` on the thread and wait for it to finish: its outcome, as a callable that
    returns its result or raises its exception, to be called where `work` would have been."""
    done = _WORKER.submit(work)
    await asyncio.wait([asyncio.wrap_future(done)])
    return done.result


def bulky_input(datatype: str, shape: Iterable[int]) -> bool:
    """Whether an input of `datatype` and `shape` is a BYTES tensor of BYTES_BULK_ELEMENTS
    elements or more (its decoding reads no more elements than its shape says)."""
    return datatype == "BYTES" and element_count(tuple(shape)) >= BYTES_BULK_ELEMENTS


def bulky_bytes(tensors: Iterable[Tensor]) -> bool:
    """Whether one of `tensors` is a BYTES tensor of BYTES_BULK_ELEMENTS elements or more."""
    return any(tensor.datatype == "BYTES"
               and getattr(tensor.data, "size", 0) >= BYTES_BULK_ELEMENTS
               for tensor in tensors)


class Decoding:
    """A request waiting for its decoding on the thread: marked cancelled if its client goes
    away meanwhile (then it is not run)."""

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
