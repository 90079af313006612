"""Unary methods answered from callbacks on the loop, without a task per call.

A grpc.aio behaviour is a coroutine: each call becomes a task, whose first step and whose
wake-up after the answer each take a turn of the event loop (an epoll_pwait and the task's
machinery; about 4 loop turns a call instead of 2). ModelInfer, the call that matters, already
has its answer delivered by a callback on the loop (`loop_bridge.final_on_loop`), so it needs no
task: `body(request, call)` starts the work and returns, and the answer goes out from the
callback through `call.reply` or `call.abort`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import grpc


class ImmediateCall(Protocol):
    """What an immediate body sees of its call."""

    @property
    def context(self) -> Any:
        """`invocation_metadata()` and the server's `loop`, as a coroutine body's context."""

    on_cancel: Callable[[], None] | None
    """Set by the body: called once if the call ends unanswered (the client reset the stream,
    the deadline passed, the server stopped)."""

    def reply(self, data: bytes) -> None:
        """The response message (serialised): the call ends OK. Ignored once it has ended."""

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        """End the call with this status. Ignored once it has ended."""


class ImmediateUnary(NamedTuple):
    """A unary method handler (in the places grpc.RpcMethodHandler goes) whose behaviour is an
    immediate body instead of a coroutine."""

    body: Callable[[Any, ImmediateCall], None]
    request_deserializer: Callable[[bytes], Any] | None
    request_streaming: bool = False
    response_streaming: bool = False
    unary_unary: None = None
    stream_stream: None = None
    response_serializer: None = None


# What a method's path maps to in the gRPC server's table.
MethodHandler = grpc.RpcMethodHandler | ImmediateUnary
