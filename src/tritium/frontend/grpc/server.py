"""A gRPC server on Tritium's own HTTP/2 layer (`http2`), serving grpcio method handlers.

The RPC bodies stay what grpc.aio runs: `grpc.RpcMethodHandler`s (unary-unary and
stream-stream, with their request deserializer and response serializer) whose behaviours are
`async def` functions taking `(request, context)`; the context offers what those bodies use,
`invocation_metadata()` and `await abort(code, details)`; an `ImmediateUnary` handler's body
answers from callbacks instead, without a task (immediate.py). Each RPC is a `Call` (call.py),
its request headers checked and read by call_headers.py.
Only the transport changes: grpcio's server costs about 280 us of CPU per unary call, which
alone would cap a one-core server at 3,500 calls/s; see `http2` for the figures.

The wire is gRPC over HTTP/2 as the gRPC protocol document puts it: length-prefixed messages
(gzip or deflate compressed when the client says `grpc-encoding`), `grpc-status` and a
percent-encoded `grpc-message` in the trailers, `grpc-timeout` deadlines (DEADLINE_EXCEEDED,
the body cancelled), and a reset stream or a closed connection cancels the body.

What one call may cost is bounded as gRPC core bounds it: a message larger than the maximum message
size (before or after decompression) fails with RESOURCE_EXHAUSTED and grpc's own wording, and a
connection may hold the larger of that size and `H2Limits.max_buffered_input` of request bytes
unread; metadata larger than the advertised header-list size fails the call the same way; an illegal
header name or a `-bin` value that is not base64 fails that call alone (INTERNAL), the connection
and its other calls go on. Request bytes are given back to the client's window as the call takes
them, so a slow streaming body slows its client down instead of piling up.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ssl

import grpc

from .call import RESPONSE_HEADERS, Call
from .call_headers import CallError, KnownHeaders, check_headers, path_of, read_headers
from .http2 import H2Connection, H2Stream, encode_headers
from .http2_limits import H2Limits
from .immediate import MethodHandler
from .status_message import status_message

# The default largest request message (after decompression too): Triton 2.51's gRPC limit
# (MAX_GRPC_MESSAGE_SIZE, INT32_MAX), so what Triton takes by default Tritium takes too.
DEFAULT_MAX_MESSAGE_SIZE = 2**31 - 1


class GrpcServer:
    """Serves `handlers` ({"/package.Service/Method": grpc.RpcMethodHandler}) on one port."""

    def __init__(self, handlers: dict[str, MethodHandler],
                 limits: H2Limits | None = None,
                 max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
                 compression_level: str = "none") -> None:
        self._handlers = handlers
        limits = limits or H2Limits()
        # A connection may hold at least one whole message (and its 5-byte prefix) unread:
        # the largest message allowed is what bounds a connection's request bytes.
        floor = max_message_size + 5
        if limits.max_buffered_input < floor:
            limits = dataclasses.replace(limits, max_buffered_input=floor)
        self.limits = limits
        self.max_message_size = max_message_size
        self.compression_level = compression_level
        self._connections: set[H2Connection] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.immediate: set[Call] = set()  # immediate calls not yet answered
        self._known_headers = KnownHeaders()
        self._server: asyncio.base_events.Server | None = None
        # The loop it serves on, known once a client connects.
        self.loop: asyncio.AbstractEventLoop

    async def start(self, host: str, port: int, ssl_context: ssl.SSLContext | None = None,
                    reuse_port: bool = False) -> int:
        """Bind and serve (over TLS with `ssl_context`); the bound port (port 0 picks one).
        OSError if it cannot bind."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._connection, host, port, reuse_address=True,
                                                ssl=ssl_context, reuse_port=reuse_port or None)
        return self._server.sockets[0].getsockname()[1]

    def _connection(self) -> H2Connection:
        self.loop = asyncio.get_running_loop()
        connection = H2Connection(self._start_call, self._connections.discard, self.limits)
        self._connections.add(connection)
        return connection

    def _start_call(self, connection: H2Connection, stream: H2Stream,
                    headers: list[tuple[str, str]]) -> Call | None:
        try:
            known = self._known_headers.get(headers)
            if known is None:
                check_headers(headers, self.limits.max_header_list_size)
                path = path_of(headers)
            else:
                path = known.path
            handler = self._handlers.get(path)
            if handler is None:
                # As grpc core answers a method nobody registered: the status, no message.
                raise CallError(grpc.StatusCode.UNIMPLEMENTED, "")
            if known is None:
                known = read_headers(headers, path)
                self._known_headers.add(headers, known)
            return Call(self, connection, stream, handler, known)
        except CallError as err:
            fields = [("grpc-status", str(err.code.value[0]))]
            if err.details:
                fields.append(("grpc-message", status_message(err.details)))
            block = RESPONSE_HEADERS + encode_headers(fields)
            connection.send_headers(stream, block, end_stream=True)
            return None

    def track(self, task: asyncio.Task[None]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def stop(self, grace: float | None) -> None:
        """Refuse new calls; calls in flight get up to `grace` seconds, then are cancelled."""
        if self._server is not None:
            self._server.close()
        for connection in list(self._connections):
            connection.go_away()
        tasks = list(self._tasks)
        if tasks and grace:
            await asyncio.wait(tasks, timeout=grace)
        if self.immediate and grace:
            # They answer from callbacks, not tasks: watch the set empty.
            deadline = self.loop.time() + grace
            while self.immediate and self.loop.time() < deadline:
                await asyncio.sleep(0.01)
        for call in list(self.immediate):
            call.cancel_immediate()
        for task in tasks:
            if not task.done():
                task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=1.0)
        for connection in list(self._connections):
            connection.close()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
