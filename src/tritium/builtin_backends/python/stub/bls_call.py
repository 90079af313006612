"""One BLS request in flight, stub side: its responses as the server sends them back, handed
to `exec` (blocking), `async_exec` (a future of the caller's event loop) or, for decoupled
calls, a response iterator (Triton's ResponseIterator).

Runs in the stub process: standard library only.
"""

from __future__ import annotations

import asyncio
import collections
import threading
from collections.abc import Callable
from typing import Any


class BlsCall:
    """The responses of one BLS request, as they come back from the server. `pb` is the
    pb_utils module, for the responses made when the server sent none."""

    def __init__(self, pb: Any, decoupled: bool) -> None:
        self.pb = pb
        self.decoupled = decoupled
        self.cond = threading.Condition()
        self.queue: collections.deque = collections.deque()
        self.final = False
        self.last: Any = None
        # For async_exec: (loop, future), resolved from the reader thread.
        self.waiting: tuple[asyncio.AbstractEventLoop, asyncio.Future] | None = None
        # The request's inputs, while the callee may map their GPU memory.
        self.keep: list | None = None
        # Tells the server to cancel the request (set by the runtime that sent it).
        self.cancel: Callable[[], None] | None = None

    def put(self, response: Any, final: bool) -> None:
        """A response (or None with only the final flag) from the reader thread."""
        with self.cond:
            self.queue.append((response, final))
            if final:
                self.final = True
            if response is not None:
                self.last = response
            self.cond.notify_all()
            waiting = self.waiting
        if waiting is not None and (self.decoupled or final):
            loop, future = waiting
            self.waiting = None
            value = ResponseIterator(self) if self.decoupled else self.result()
            loop.call_soon_threadsafe(_resolve, future, value)

    def wait_final(self) -> Any:
        """Block until the final flag; the call's response."""
        with self.cond:
            while not self.final:
                self.cond.wait()
        return self.result()

    def result(self) -> Any:
        if self.last is not None:
            return self.last
        return self.pb.InferenceResponse(
            error=self.pb.TritonError("BLS request received no response")
        )


def _resolve(future: asyncio.Future, value: Any) -> None:
    if not future.done():
        future.set_result(value)


class ResponseIterator:
    """What `exec(decoupled=True)` returns: each response as it comes; the last one carries
    the final flag (an empty response when the model sent the flag alone). As Triton's, it
    keeps the responses: once the last has come, iterating again replays them all, so a model
    may loop over the same iterator twice (Triton's BLS test_response_iterator does)."""

    def __init__(self, call: BlsCall) -> None:
        self._call = call
        self._done = False
        self._responses: list[Any] = []
        self._index = 0  # the next kept response to replay, once done

    def __iter__(self) -> ResponseIterator:
        if self._done and self._index >= len(self._responses):
            self._index = 0
        return self

    def __next__(self) -> Any:
        if self._done:
            if self._index < len(self._responses):
                self._index += 1
                return self._responses[self._index - 1]
            raise StopIteration
        call = self._call
        with call.cond:
            while not call.queue:
                call.cond.wait()
            response, final = call.queue.popleft()
        if final and response is None:
            response = call.pb.InferenceResponse()
        self._responses.append(response)
        if final:
            self._done = True
            self._index = len(self._responses)  # this loop ends here; the next one replays
        return response

    def cancel(self) -> None:
        """Triton's ResponseIterator.cancel(): the server cancels the request, as a client's
        (the model answering it sees `request.is_cancelled()`); nothing once it is done."""
        call = self._call
        with call.cond:
            done = call.final
        if not done and call.cancel is not None:
            call.cancel()
