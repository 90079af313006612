"""One RPC on one stream of the gRPC server (`server.py`): the `http2.StreamHandler` of that
stream.

A call reads its request messages (length-prefixed, gzip or deflate compressed when the client
says `grpc-encoding`), runs its body (a grpc.aio coroutine or generator as a task, or an
immediate body, `immediate.py`), and ends with `grpc-status` and a percent-encoded
`grpc-message` in the trailers. A `grpc-timeout` deadline ends it with DEADLINE_EXCEEDED, a
reset stream or a closed connection cancels it; request bytes go back to the client's window as
the body takes them. A large message is inflated, and a large response deflated, on the bulk
thread (`frontend/bulk_work.py`); the call reads on once its message is inflated, so its
messages keep their order.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future
from functools import partial
from typing import Any, Protocol

import grpc

from ..bulk_work import DEFLATE_BULK_SIZE, INFLATE_BULK_SIZE, Decoding, later, off_loop
from .call_headers import CallHeaders
from .call_requests import CallRequests
from .compression import (
    INFER_METHODS,
    PREFIX,
    MessageError,
    compressed_message,
    encoding_header,
    inflate,
    response_algorithm,
)
from .http2 import H2Connection, H2Stream, encode_headers
from .immediate import ImmediateUnary
from .status_message import status_message

log = logging.getLogger("tritium.frontend.grpc")

RESPONSE_HEADERS = encode_headers([(":status", "200"), ("content-type", "application/grpc")])
_OK_TRAILERS = encode_headers([("grpc-status", "0")])
# What Triton answers when a request message does not parse (or never came whole).
UNPARSABLE = "Unable to parse request"
_TIMEOUT = re.compile(r"^(\d{1,8})([HMSmun])$")
_TIMEOUT_UNITS = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}


class AbortError(Exception):
    """Raised by `context.abort`: the call ends with this status."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code = code
        self.details = details


class _Context:
    """What an RPC body sees of its call (the part of grpc.aio's ServicerContext it uses)."""

    __slots__ = ("_metadata", "loop")

    def __init__(self, metadata: tuple[tuple[str, Any], ...],
                 loop: asyncio.AbstractEventLoop) -> None:
        self._metadata = metadata
        # The server's loop, which the body runs on (asking asyncio costs a getpid() system
        # call per request on Python 3.11).
        self.loop = loop

    def invocation_metadata(self) -> tuple[tuple[str, Any], ...]:
        return self._metadata

    async def abort(self, code: grpc.StatusCode, details: str = "") -> None:
        raise AbortError(code, details)


class _AioMethodHandler(Protocol):
    """What a call uses of a `grpc.RpcMethodHandler` made for grpc.aio: its behaviours are a
    coroutine function (unary) or an async generator function (stream), which grpc's stubs,
    written for the sync server, do not describe."""

    @property
    def request_streaming(self) -> bool: ...
    @property
    def request_deserializer(self) -> Callable[[bytes], Any] | None: ...
    @property
    def response_serializer(self) -> Callable[[Any], bytes] | None: ...
    @property
    def unary_unary(self) -> Callable[..., Any] | None: ...
    @property
    def stream_stream(self) -> Callable[..., Any] | None: ...


class CallHost(Protocol):
    """What a call needs of its server (`server.GrpcServer`): a protocol, so that the server
    imports the call and not the other way round."""

    loop: asyncio.AbstractEventLoop
    compression_level: str
    max_message_size: int
    # Immediate calls not yet answered (the server cancels them when it stops).
    immediate: set[Call]

    def track(self, task: asyncio.Task[None]) -> None: ...


class Call:
    """One RPC on one stream (the `http2.StreamHandler` of that stream)."""

    def __init__(self, server: CallHost, connection: H2Connection, stream: H2Stream,
                 handler: _AioMethodHandler, headers: CallHeaders) -> None:
        self.server = server
        self.path = headers.path
        self.connection = connection
        self.stream = stream
        self.handler = handler
        self.buffer = bytearray()
        self.unary_request: bytes | None = None
        self.task: asyncio.Task[None] | None = None
        # An immediate body's call (immediate.py) from its start until it is answered.
        self.immediate_running = False
        self.on_cancel: Callable[[], None] | None = None
        self.deadline: asyncio.TimerHandle | None = None
        self.deadline_passed = False
        self.encoding = headers.encoding
        self.held = 0  # request bytes counted in connection.buffered_input
        self.unreleased = 0  # DATA bytes not yet given back to the client's window
        self.failed = False
        # The message being inflated on the bulk thread (what comes after it waits), and
        # whether the client ended its side meanwhile.
        self.inflating: Decoding | None = None
        self.ended_while_inflating = False
        self.context = _Context(headers.metadata, server.loop)
        # The response's compression (--grpc-infer-response-compression-level): its headers.
        self.response_headers = RESPONSE_HEADERS
        self.compression: str | None = None
        if server.compression_level != "none" and self.path in INFER_METHODS:
            self.compression = response_algorithm(server.compression_level,
                                                  headers.accept_encoding)
            if self.compression is not None:
                self.response_headers += encoding_header(self.compression)
        self.requests: CallRequests | None = None
        if handler.request_streaming:
            self.requests = CallRequests(handler.request_deserializer, self._taken)
            self._run(self._stream())
        if headers.timeout is not None:
            self._set_deadline(headers.timeout)

    def _run(self, body: Any) -> None:
        """Run the call's body; it counts against the connection's concurrent streams until it
        has finished, even if the client resets the stream first (`H2Connection.running`)."""
        connection = self.connection
        connection.handler_started()
        self.task = task = self.server.loop.create_task(body)
        self.server.track(task)
        task.add_done_callback(lambda _: connection.handler_finished())

    # -- from the connection -------------------------------------------------------------------

    def on_data(self, data: bytes) -> None:
        self.unreleased += len(data)
        if not self.failed:
            self._read(data)
        if self.requests is None or not self.requests.waiting or self.failed:
            self._release()

    def _read(self, data: bytes) -> None:
        buffer = self.buffer
        self._hold(len(data))
        limit = self.server.max_message_size
        if not buffer and self.unary_request is None and self.requests is None \
                and self.inflating is None and len(data) >= 5:
            # The usual unary request: one uncompressed message in one DATA frame, taken
            # without going through the buffer (two copies fewer).
            compressed, length = PREFIX.unpack_from(data)
            if not compressed and length == len(data) - 5 and length <= limit:
                self.unary_request = data[5:]
                self._check_buffered()
                return
        buffer += data
        if self.inflating is None:
            self._take_messages()
        else:
            self._check_buffered()

    def _take_messages(self) -> None:
        """Take the whole messages in the buffer, in order; one that is compressed and large
        is inflated off the loop, the rest waiting for it (`_inflated`)."""
        buffer = self.buffer
        limit = self.server.max_message_size
        while len(buffer) >= 5:
            compressed, length = PREFIX.unpack_from(buffer)
            if length > limit:
                self._fail(grpc.StatusCode.RESOURCE_EXHAUSTED,
                           f"Received message larger than max ({length} vs. {limit})")
                return
            if len(buffer) < 5 + length:
                break
            message = bytes(memoryview(buffer)[5:5 + length])  # one copy (a slice is two)
            del buffer[:5 + length]
            if compressed:
                if length >= INFLATE_BULK_SIZE:
                    self.inflating = waiting = Decoding()
                    later(partial(inflate, self.encoding, message, limit), self.server.loop,
                          partial(self._inflated, waiting, length))
                    break
                try:
                    message = inflate(self.encoding, message, limit)
                except MessageError as exc:
                    self._fail(exc.code, exc.details)
                    return
            if not self._take(message, length):
                return
        self._check_buffered()

    def _take(self, message: bytes, length: int) -> bool:
        """A request message read (`length` bytes on the wire): the stream's next, or the
        unary call's one; False once the call has failed."""
        if self.requests is not None:
            self._hold(len(message) - 5 - length)  # held until the body takes it
            self.requests.push(message)
        elif self.unary_request is None:
            self.unary_request = message
        else:
            self._fail(grpc.StatusCode.UNIMPLEMENTED,
                       "Received a second request message for a unary RPC")
            return False
        return True

    def _inflated(self, waiting: Decoding, length: int, inflated: Future[bytes]) -> None:
        """A message inflated off the loop: taken, then what came after it, then the end of
        the client's side if it came meanwhile (dropped if the call ended meanwhile)."""
        if waiting.cancelled or self.failed or self.stream.closed:
            return
        self.inflating = None
        try:
            message = inflated.result()
        except MessageError as exc:
            return self._fail(exc.code, exc.details)
        if not self._take(message, length):
            return
        self._take_messages()
        if self.inflating is None and self.ended_while_inflating:
            self.on_end()

    def _check_buffered(self) -> None:
        """Fail the call whose bytes take the connection past its unread-input limit."""
        if self.connection.buffered_input > self.connection.limits.max_buffered_input:
            self._fail(grpc.StatusCode.RESOURCE_EXHAUSTED,
                       "The connection holds too many unread request bytes "
                       f"(more than {self.connection.limits.max_buffered_input})")

    def _hold(self, size: int) -> None:
        self.held += size
        self.connection.buffered_input += size

    def _taken(self, size: int) -> None:
        """The streaming body took a message: its bytes are the client's again (none once the
        call has dropped what it held)."""
        self._hold(-min(size, self.held))
        if self.requests is not None and not self.requests.waiting:
            self._release()

    def _release(self) -> None:
        if self.unreleased:
            size, self.unreleased = self.unreleased, 0
            self.connection.release(self.stream, size)

    def _fail(self, code: grpc.StatusCode, details: str) -> None:
        """The call cannot go on for something its client sent: its status now, its body (if
        running) cancelled, anything more it sends dropped."""
        self.failed = True
        self._drop()
        self._finish(code, details)
        self.on_reset()

    def _drop(self) -> None:
        self.buffer = bytearray()
        self.unary_request = None
        self._hold(-self.held)
        if self.inflating is not None:
            self.inflating.cancel()
            self.inflating = None

    def on_end(self) -> None:
        if self.inflating is not None:
            self.ended_while_inflating = True
            return
        if self.requests is not None:
            self.requests.end()
            return
        if self.stream.closed or self.failed:
            return
        if self.unary_request is None:
            # No message, or the stream ended inside one: Triton cannot parse that either.
            self._finish(grpc.StatusCode.INTERNAL, UNPARSABLE)
            return
        message, self.unary_request = self.unary_request, None
        self._drop()
        if isinstance(self.handler, ImmediateUnary):
            self._start_immediate(self.handler, message)
            return
        self._run(self._unary(message))

    def on_reset(self) -> None:
        if self.requests is not None:
            self.requests.end()
        self.cancel_immediate()
        if self.task is not None and not self.task.done():
            self.task.cancel()
        self._clear_deadline()
        self._drop()

    # -- running the body ----------------------------------------------------------------------

    async def _unary(self, message: bytes) -> None:
        handler = self.handler
        try:
            deserialize = handler.request_deserializer
            request = deserialize(message) if deserialize is not None else message
            assert handler.unary_unary is not None  # a unary call has a unary behaviour
            response = await handler.unary_unary(request, self.context)
            serialize = handler.response_serializer
            answer = await self._framed(serialize(response) if serialize is not None
                                        else response)
        except BaseException as exc:
            self._stopped(exc)
        else:
            self._clear_deadline()
            self.connection.send_data(self.stream, *answer, trailers=_OK_TRAILERS,
                                      headers=self.response_headers)

    def _start_immediate(self, handler: ImmediateUnary, message: bytes) -> None:
        self.immediate_running = True
        self.connection.handler_started()
        self.server.immediate.add(self)
        try:
            deserialize = handler.request_deserializer
            handler.body(deserialize(message) if deserialize is not None else message, self)
        except Exception as exc:
            if self.immediate_running:
                self._end_immediate()
                self._stopped(exc)

    def reply(self, data: bytes) -> None:
        """An immediate body's response: the call ends OK (a large compressed one once it is
        deflated off the loop, unless the call ended meanwhile)."""
        if not self.immediate_running:
            return
        if self.compression is not None and len(data) >= DEFLATE_BULK_SIZE:
            later(partial(compressed_message, self.compression, data), self.server.loop,
                  lambda framed: self._send_reply(framed.result))
            return
        self._send_reply(partial(self._message, data))

    def _send_reply(self, message: Callable[[], tuple[bytes, bytes]]) -> None:
        if not self.immediate_running:
            return
        self._end_immediate()
        try:
            pieces = message()
        except Exception as exc:  # a fault of ours: UNKNOWN, logged, as for a failing body
            return self._stopped(exc)
        self._clear_deadline()
        self.connection.send_data(self.stream, *pieces, trailers=_OK_TRAILERS,
                                  headers=self.response_headers)

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        """An immediate body's failure: the call ends with this status."""
        if not self.immediate_running:
            return
        self._end_immediate()
        self._finish(code, details)

    def cancel_immediate(self) -> None:
        """End an immediate call unanswered (reset, deadline, server stop): its body hears of
        it through `on_cancel`."""
        if not self.immediate_running:
            return
        on_cancel = self.on_cancel
        self._end_immediate()
        if on_cancel is not None:
            on_cancel()

    def _end_immediate(self) -> None:
        self.immediate_running = False
        self.on_cancel = None
        self.server.immediate.discard(self)
        self.connection.handler_finished()

    async def _stream(self) -> None:
        handler = self.handler
        serialize = handler.response_serializer
        connection, stream = self.connection, self.stream
        try:
            assert self.requests is not None and handler.stream_stream is not None
            responses: AsyncIterator[Any] = handler.stream_stream(self.requests, self.context)
            async for response in responses:
                message = await self._framed(serialize(response) if serialize is not None
                                             else response)
                if stream.headers_sent:
                    connection.send_data(stream, *message)
                else:
                    connection.send_data(stream, *message, headers=self.response_headers)
        except BaseException as exc:
            self._stopped(exc)
        else:
            self._finish(grpc.StatusCode.OK, "")

    def _stopped(self, exc: BaseException) -> None:
        """End a call whose body did not return: aborted (its status), cancelled (by the
        client, silently, or by its deadline), or failed (UNKNOWN with grpc.aio's wording; the
        server keeps serving)."""
        if isinstance(exc, AbortError):
            self._finish(exc.code, exc.details)
        elif isinstance(exc, asyncio.CancelledError):
            if self.deadline_passed:
                self._finish(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")
        elif isinstance(exc, Exception):
            log.error("gRPC call failed", exc_info=exc)
            self._finish(grpc.StatusCode.UNKNOWN, f"Unexpected {type(exc)}: {exc}")
        else:
            raise exc

    def _finish(self, code: grpc.StatusCode, details: str) -> None:
        """End the call with a status (trailers, or a trailers-only answer)."""
        self._clear_deadline()
        stream = self.stream
        if code is grpc.StatusCode.OK:
            trailers = _OK_TRAILERS
            fields: list[tuple[str, str]] = []
        else:
            fields = [("grpc-status", str(code.value[0]))]
            if details:
                fields.append(("grpc-message", status_message(details)))
            trailers = encode_headers(fields)
        if stream.headers_sent:
            self.connection.send_trailers(stream, trailers)
        else:
            block = RESPONSE_HEADERS + (encode_headers(fields) if fields else _OK_TRAILERS)
            self.connection.send_headers(stream, block, end_stream=True)

    # -- helpers -------------------------------------------------------------------------------

    def _message(self, data: bytes) -> tuple[bytes, bytes]:
        """One length-prefixed response message, compressed if the call's responses are: its
        prefix and payload (not joined: a large payload is not copied behind its prefix)."""
        if self.compression is None:
            return PREFIX.pack(0, len(data)), data
        return compressed_message(self.compression, data)

    async def _framed(self, data: bytes) -> tuple[bytes, bytes]:
        """`_message`, a large compressed one deflated off the loop."""
        if self.compression is not None and len(data) >= DEFLATE_BULK_SIZE:
            return (await off_loop(partial(compressed_message, self.compression, data)))()
        return self._message(data)

    def _set_deadline(self, text: str) -> None:
        match = _TIMEOUT.match(text)
        if match is None:
            return
        seconds = int(match.group(1)) * _TIMEOUT_UNITS[match.group(2)]
        self.deadline = self.server.loop.call_later(seconds, self._deadline_expired)

    def _deadline_expired(self) -> None:
        self.deadline = None
        self.deadline_passed = True
        if self.immediate_running:
            self.cancel_immediate()
            self._finish(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")
        elif self.task is not None and not self.task.done():
            self.task.cancel()
        elif self.task is None:
            self._finish(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")

    def _clear_deadline(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None
