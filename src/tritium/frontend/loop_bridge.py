"""The loop bridge: the one place where the core's threads meet an asyncio event loop.

The core answers from whatever thread runs the model (`Deliver(response, flags)`, called by
`InferenceServer.infer_async` or a resolved model's `submit`); frontends live in the server's
event loop. Each need has one entry here, used alike by HTTP, gRPC, generate and the
in-process API:

- `answer`: the request's final response, awaited (an error response raises);
- `responses`: every response as it comes, as an async iterator (decoupled models, streams);
- `each_on_loop`: every response handed to a callback on the loop, for frontends that answer
  from callbacks rather than tasks (generate, the OpenAI frontend, the in-process API);
- `final_on_loop`: the same for a frontend that answers once (HTTP and gRPC inference): only
  the final response, the loop woken once.

Both also count the loop's requests in flight for its busy poll (`busy_poll`), which keeps the
loop polling for a while after it answers the last of them.

`submit` is `InferenceServer.infer_async` (the server looks the model up) or the `submit` of a
model the frontend resolved once for the request (`InferenceServer.resolve`), so that decode,
inference and encode all see one version. A response that arrives after the loop closed (a
backend thread finishing during shutdown) has nobody left to read it and is dropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from typing import Any

from .. import handoff
from ..errors import TritonError
from ..request import RESPONSE_COMPLETE_FINAL, Deliver, InferenceRequest, InferenceResponse
from . import busy_poll

# How a request reaches the core: InferenceServer.infer_async or ResolvedModel.submit.
Submit = Callable[[InferenceRequest, Deliver], None]


async def answer(submit: Submit, request: InferenceRequest) -> InferenceResponse:
    """Run `request` and return its final response (a decoupled model's last one).

    Raises TritonError at once for a request that cannot be routed or validated, and for an
    error response. Cancelling the awaiting task marks the request cancelled. The backend's
    thread wakes the loop once, for the final response.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[InferenceResponse] = loop.create_future()
    kept: list[InferenceResponse] = []

    def deliver(response: InferenceResponse | None, flags: int) -> None:
        # On the backend's thread: keep the responses, wake the loop for the final one only.
        if response is not None:
            kept.append(response)
        if flags & RESPONSE_COMPLETE_FINAL:
            handoff.wake(_call_soon, loop, _resolve, done, _last(kept))

    submit(request, deliver)
    try:
        response = await done
    except asyncio.CancelledError:
        request.cancelled = True
        raise
    if response.error is not None:
        raise response.error
    return response


async def responses(
    submit: Submit, request: InferenceRequest
) -> AsyncGenerator[tuple[InferenceResponse | None, bool], None]:
    """Every response of `request` as it comes, with whether it is the final one.

    For decoupled models (any number of responses, possibly an empty final) and ordinary
    ones alike. Raises TritonError at the first step for a request that cannot be routed or
    validated. Closing the iterator early marks the request cancelled, and what the model still
    sends is dropped: nobody reads it, and a model that keeps sending would grow the queue
    without bound.
    """
    queue: asyncio.Queue[tuple[InferenceResponse | None, bool]] = asyncio.Queue()
    closed = False

    def keep(response: InferenceResponse | None, final: bool) -> None:
        if not closed:
            queue.put_nowait((response, final))

    each_on_loop(submit, request, keep)
    final = False
    try:
        while not final:
            response, final = await queue.get()
            yield response, final
    finally:
        closed = True
        if not final:
            request.cancelled = True
            while not queue.empty():  # let go of those that came meanwhile
                queue.get_nowait()


def each_on_loop(submit: Submit, request: InferenceRequest,
                 on_response: Callable[[Any, bool], None],
                 loop: asyncio.AbstractEventLoop | None = None,
                 prepare: Callable[[InferenceResponse], Any] | None = None) -> None:
    """Start `request`; `on_response(response, final)` runs on the running event loop (`loop`,
    when the caller knows it) for each response as it comes, `final` true on the last (whose
    response may be None). With `prepare`, on_response gets `prepare(response)` instead, run
    on the thread that sent the response: work (encoding a large answer) the loop need not do;
    `prepare` must not raise.

    Raises TritonError at once for a request that cannot be routed or validated.
    """
    if loop is None:
        # Python 3.11 checks the process id here: a getpid() system call per request for a
        # caller that passes its loop.
        loop = asyncio.get_running_loop()

    flight = _InFlight()

    def on_loop(response: Any, final: bool) -> None:
        if not final:
            return on_response(response, False)
        flight.answering()
        try:
            on_response(response, True)
        finally:
            flight.answered()

    def deliver(response: InferenceResponse | None, flags: int) -> None:
        prepared = prepare(response) if prepare is not None and response is not None \
            else response
        handoff.wake(_call_soon, loop, on_loop, prepared, bool(flags & RESPONSE_COMPLETE_FINAL))

    try:
        submit(request, deliver)
    except BaseException:
        flight.withdraw()
        raise


def final_on_loop(submit: Submit, request: InferenceRequest,
                  on_final: Callable[[InferenceResponse], None],
                  loop: asyncio.AbstractEventLoop) -> None:
    """Start `request`; `on_final` runs on `loop` with its final response (the last one sent,
    error set when the request failed). The backend's thread keeps the responses before it and
    wakes the loop once.

    Raises TritonError at once for a request that cannot be routed or validated.
    """
    relay = _FinalRelay(on_final, loop)
    try:
        submit(request, relay.deliver)
    except BaseException:
        relay.withdraw()
        raise


class _InFlight:
    """A request counted in flight on this thread's loop from its submission until its final
    answer has been handled: by the HTTP hand-off deferral (hand-offs are deferred only past a
    lone request) and by the busy poll (which starts once none is left)."""

    __slots__ = ("deferral", "poll")

    def __init__(self) -> None:
        self.deferral = deferral = handoff.current()
        if deferral is not None:
            deferral.awaiting += 1
        self.poll = poll = busy_poll.current()
        if poll is not None:
            poll.inflight += 1

    def answering(self) -> None:
        """The final response reached the loop: it awaits nothing more."""
        if self.deferral is not None:
            self.deferral.awaiting -= 1

    def answered(self) -> None:
        """The final answer has been handled (written): the poll may start."""
        if self.poll is not None:
            self.poll.answered()

    def withdraw(self) -> None:
        """The request was refused: it was never in flight."""
        if self.deferral is not None:
            self.deferral.awaiting -= 1
        if self.poll is not None:
            self.poll.inflight -= 1


class _FinalRelay(_InFlight):
    """One request's way back to the loop for `final_on_loop`: one object, rather than a
    closure per concern (in flight, final response only), as it is made for every request."""

    __slots__ = ("on_final", "loop", "last")

    def __init__(self, on_final: Callable[[InferenceResponse], None],
                 loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self.on_final = on_final
        self.loop = loop
        self.last: InferenceResponse | None = None

    def deliver(self, response: InferenceResponse | None, flags: int) -> None:
        """On the backend's thread."""
        if response is not None:
            self.last = response
        if flags & RESPONSE_COMPLETE_FINAL:
            handoff.wake(_call_soon, self.loop, self.on_loop)

    def on_loop(self) -> None:
        self.answering()
        last = self.last
        try:
            self.on_final(last if last is not None else _no_response())
        finally:
            self.answered()


def _call_soon(loop: asyncio.AbstractEventLoop, callback: Callable[..., None],
               *args: Any) -> None:
    """`callback(*args)` on `loop`, from a backend's thread: made through `handoff.wake`, which
    may hold it a little (an execution's closing answers)."""
    try:
        loop.call_soon_threadsafe(callback, *args)
    except RuntimeError:
        pass  # the loop has closed


def _last(kept: list[InferenceResponse]) -> InferenceResponse:
    return kept[-1] if kept else _no_response()


def _no_response() -> InferenceResponse:
    return InferenceResponse(error=TritonError.internal("model sent no response"))


def _resolve(done: asyncio.Future[InferenceResponse], response: InferenceResponse) -> None:
    if not done.done():
        done.set_result(response)
