"""A streaming call's request messages, as the async iterator its body reads (what grpc.aio
hands a stream-stream behaviour): pushed by the call as they are read off the stream, taken by
the body one at a time, each handed back to the call (`on_taken`) so that its bytes return to
the client's flow-control window."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any


class CallRequests:
    """A streaming call's request messages, as the async iterator its body reads;
    `on_taken(size)` when the body takes one."""

    def __init__(self, deserialize: Any, on_taken: Callable[[int], None]) -> None:
        self._deserialize = deserialize
        self._on_taken = on_taken
        self._messages: deque[bytes] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._ended = False

    @property
    def waiting(self) -> int:
        return len(self._messages)

    def push(self, message: bytes) -> None:
        self._messages.append(message)
        self._wake()

    def end(self) -> None:
        self._ended = True
        self._wake()

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def __aiter__(self) -> CallRequests:
        return self

    async def __anext__(self) -> Any:
        while not self._messages:
            if self._ended:
                raise StopAsyncIteration
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        message = self._messages.popleft()
        self._on_taken(len(message))
        return self._deserialize(message) if self._deserialize is not None else message


__all__ = ["CallRequests"]
