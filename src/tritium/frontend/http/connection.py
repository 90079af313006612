"""One HTTP/1.1 client connection of the HTTP/REST frontend: a lean asyncio Protocol on
httptools, in the server's loop. Its endpoint (`endpoint.py`) listens, sweeps and stops.

The frontend's routes are few and its bodies are read whole before they are answered, so an ASGI
server's generality (scope dicts, receive/send messages, a task per request, per-request timers)
is per-request work this server does not need. A connection here parses with httptools (the
parser uvicorn uses), hands each complete request to the handler, and writes its answer in one
`transport.write` (a streamed answer, as generate_stream sends, goes out as chunks of a chunked
transfer encoding instead). What clients see is what uvicorn gave them: the same status lines and
lowercase headers, keep-alive by default (`Connection: close` and HTTP/1.0 close after the
answer), pipelined requests answered in order, `100 Continue` for `Expect: 100-continue`, a 400
for a request that does not parse, and a request whose client goes away before its answer is
complete marked cancelled.

A request body (Content-Length or chunked, of any size) is kept only up to the endpoint's
`max_input_size` (Triton's `--http-max-input-size`, 64 MB by default); past it the rest is
read and dropped, and the request is answered 400 (at once, closing the connection, when
the body goes on past twice the limit). The request line and header section are bounded in
size and time (limits.py).
"""

from __future__ import annotations

import asyncio
import http
import logging
from collections import deque
from time import perf_counter_ns
from typing import Any, Protocol, cast
from urllib.parse import unquote

import httptools

from ...handoff import Deferral, deferring
from .limits import HEADERS_TOO_LARGE, URL_TOO_LONG, HttpLimits, Refused, closing_answer

log = logging.getLogger("tritium.http")


def _status_line(code: int) -> bytes:
    try:
        phrase = http.HTTPStatus(code).phrase.encode()
    except ValueError:
        phrase = b""
    return b"HTTP/1.1 %d %s\r\n" % (code, phrase)


STATUS_LINES = {code: _status_line(code) for code in range(100, 600)}
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
# An answer's buffers up to this size together go out joined, in one write; larger ones one
# after the other, uncopied (joining 60 MB took the event loop 25 ms).
JOIN_LIMIT = 64 * 1024
_BAD_REQUEST = closing_answer(b"400 Bad Request", b"Invalid HTTP request received.")
_INTERNAL_ERROR = closing_answer(b"500 Internal Server Error", b"Internal Server Error")


def _without_body(answer: bytes) -> bytes:
    """A whole answer's status line and headers: what a HEAD request gets of it."""
    return answer[: answer.index(b"\r\n\r\n") + 4]


def _too_large_body(limit: int) -> bytes:
    return (b'{"error":"Request body size exceeds the maximum allowed value of %d bytes. '
            b'Use --http-max-input-size to increase the limit."}' % limit)


def _too_large_headers(limit: int) -> bytes:
    return (b"content-length: %d\r\ncontent-type: application/json\r\n"
            % len(_too_large_body(limit)))


class Request:
    """One parsed request: the method (bytes), the path as sent (bytes, without the query) and
    percent-decoded (str), lowercase header names with their values, the whole body (empty,
    and `too_large` set, when it was larger than the endpoint accepts)."""

    __slots__ = ("method", "raw_path", "path", "headers", "body", "too_large", "header_names",
                 "recv_start_ns", "recv_end_ns")

    def __init__(self, method: bytes, raw_path: bytes, headers: list[tuple[bytes, bytes]],
                 body: bytes, too_large: bool = False) -> None:
        self.method = method
        self.raw_path = raw_path
        # The percent-decoded path, for matching fixed routes (as an ASGI server's `path`).
        path = raw_path.decode("latin-1")
        self.path = unquote(path) if "%" in path else path
        self.headers = headers
        self.body = body
        self.too_large = too_large
        # When its first and last bytes arrived (a trace's HTTP_RECV_START and _END).
        self.recv_start_ns = self.recv_end_ns = 0
        # The header names as sent (same order as `headers`), kept only for endpoints that
        # forward headers as request parameters (--http-header-forward-pattern).
        self.header_names: list[bytes] | None = None


class Handler(Protocol):
    def __call__(self, connection: HttpConnection, request: Request, /) -> None:
        """Answer `request` through `connection.respond`, now or later (from the loop)."""


class ConnectionHost(Protocol):
    """What a connection needs of its endpoint (`endpoint.HttpEndpoint`): a protocol, so that
    the endpoint imports the connection and not the other way round."""

    handler: Handler
    loop: asyncio.AbstractEventLoop
    deferral: Deferral  # the loop's hand-offs of one turn
    limits: HttpLimits
    max_input_size: int
    keep_header_names: bool
    stopping: bool
    connections: set[HttpConnection]


class HttpConnection(asyncio.Protocol):
    """One client connection: parse requests, hand them to the handler one at a time."""

    def __init__(self, endpoint: ConnectionHost) -> None:
        self._endpoint = endpoint
        self._handler = endpoint.handler
        self.loop = endpoint.loop
        self._parser = httptools.HttpRequestParser(self)
        # Answer the first of pipelined requests even when the client closes after them. A
        # chunked body whose request also carries Content-Length (what `requests` sends for a
        # generator body) is read by its chunks, as RFC 9112 6.3 allows when the connection is
        # closed after the answer (on_headers_complete sees to both); anything more ambiguous
        # (two Content-Lengths, a Transfer-Encoding other than plain "chunked") stays a 400.
        self._parser.set_dangerous_leniencies(lenient_data_after_close=True,
                                              lenient_chunked_length=True)
        self.transport: asyncio.Transport | None = None
        # The request being parsed.
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._names: list[bytes] | None = [] if endpoint.keep_header_names else None
        self._body: list[bytes] = []
        self._body_size = 0
        self._max_input_size = endpoint.max_input_size
        self._limits = endpoint.limits
        # The head (request line and headers) being read: its bytes so far and when its first
        # byte came (None: between requests).
        self._in_head = True
        self._head_bytes = 0
        self.head_started: float | None = None
        self._expect_continue = False
        self._transfer_encodings: list[bytes] = []
        self._content_length = False
        self._close_after = False  # chunked with Content-Length: no keep-alive after the answer
        self._in_message = False
        self._recv_start_ns = 0
        self._parsing_head = False  # the request being parsed is a HEAD (its refusals too)
        # The request being answered (the endpoint's sweep leaves a busy connection alone), and
        # those pipelined behind it.
        self.busy = False
        self._head = False  # the request being answered is a HEAD: no body in the answer
        self._keep_alive = True
        self._streaming = False  # the answer being sent is a chunked stream (start_stream)
        # What the answer being waited for is about: its `cancelled` flag is set if the
        # client goes away or the endpoint stops before the answer (the handler sets it).
        self.pending: Any = None
        self._pipeline: deque[tuple[Request, bool]] = deque()
        self._reading_paused = False
        self._writing_paused = False
        self._closed = False
        self.idle_since = self.loop.time()

    # -- asyncio.Protocol ----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a stream transport
        self._endpoint.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._endpoint.connections.discard(self)
        self._pipeline.clear()
        del self._parser  # it refers back to this connection
        # The client went away before its answer was complete: as Triton's request-fini hook
        # does, the request is cancelled (a model may stop early; its answers are dropped).
        pending, self.pending = self.pending, None
        if pending is not None and self.busy:
            pending.cancelled = True

    def data_received(self, data: bytes) -> None:
        # The requests read in this turn reach their models together at its end (handoff).
        if self._in_head:
            if self.head_started is None:
                self.head_started = self.loop.time()
            self._head_bytes += len(data)
        outer = deferring(self._endpoint.deferral)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            # No protocol upgrades here: the request is answered as an ordinary one.
            if self._in_message:
                self.on_message_complete()
        except (httptools.HttpParserError, UnicodeDecodeError) as exc:
            cause = exc.__context__
            if isinstance(cause, Refused):
                return self.refuse(cause.answer)
            if cause is not None and not isinstance(cause, (ValueError, UnicodeError)):
                # A fault of ours in a parser callback, not the client's: a 500, logged.
                log.error("HTTP request handling failed", exc_info=cause)
                return self.refuse(_INTERNAL_ERROR)
            log.warning("Invalid HTTP request received.")
            # A request line broken after its method: the method is known (on_url may not
            # have come yet); a broken method leaves the last request's in the parser.
            if not isinstance(exc, httptools.HttpParserInvalidMethodError):
                self._parsing_head = self._parser.get_method() == b"HEAD"
            self.refuse(_BAD_REQUEST)
        finally:
            deferring(outer)
        # The parser keeps a header it has not finished: bound what it holds.
        if (self._in_head and self._head_bytes > self._limits.max_header_size
                and not self._closed):
            self.refuse(HEADERS_TOO_LARGE)

    def eof_received(self) -> bool | None:
        return None

    def pause_writing(self) -> None:
        self._writing_paused = True
        self._pause_reading()

    def resume_writing(self) -> None:
        self._writing_paused = False
        if not self._pipeline:
            self._resume_reading()

    # -- httptools callbacks -------------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._recv_start_ns = perf_counter_ns()
        self._in_message = True
        self._parsing_head = False
        self._url = b""
        self._headers = []
        if self._names is not None:
            self._names = []
        self._body = []
        self._body_size = 0
        self._expect_continue = False
        self._transfer_encodings = []
        self._content_length = False

    def on_url(self, url: bytes) -> None:
        self._parsing_head = self._parser.get_method() == b"HEAD"
        self._url += url
        if len(self._url) > self._limits.max_url_size:
            raise Refused(URL_TOO_LONG)

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._names is not None:
            self._names.append(name)
        name = name.lower()
        if name == b"expect" and value.lower() == b"100-continue":
            self._expect_continue = True
        elif name == b"transfer-encoding":
            self._transfer_encodings.append(value)
        elif name == b"content-length":
            self._content_length = True
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        self._in_head = False
        self.head_started = None
        if self._transfer_encodings:
            # Raised here, the parser stops: the request is answered 400 and the connection
            # closed (data_received) before any of the body is read.
            if [v.strip().lower() for v in self._transfer_encodings] != [b"chunked"]:
                raise ValueError("Transfer-Encoding other than one plain 'chunked'")
            self._close_after = self._content_length
        if self._expect_continue and not self.busy and self.transport is not None:
            self.transport.write(_CONTINUE)

    def on_body(self, body: bytes) -> None:
        self._body_size += len(body)
        if self._body_size > self._max_input_size:
            # Too large: read the rest (keeping none of it) to answer at its end, unless there
            # is as much again: then answer now and close (a body may be endless).
            self._body.clear()
            if self._body_size > 2 * self._max_input_size:
                self.refuse(STATUS_LINES[400] + _too_large_headers(self._max_input_size)
                            + b"connection: close\r\n\r\n"
                            + _too_large_body(self._max_input_size))
            return
        self._body.append(body)

    def on_message_complete(self) -> None:
        self._in_message = False
        self._parsing_head = False
        self._in_head = True
        self._head_bytes = 0
        parser = self._parser
        body = self._body
        parsed = httptools.parse_url(self._url)
        too_large = self._body_size > self._max_input_size
        request = Request(
            parser.get_method(),
            parsed.path,
            self._headers,
            b"" if too_large else body[0] if len(body) == 1 else b"".join(body),
            too_large,
        )
        request.header_names = self._names
        request.recv_start_ns = self._recv_start_ns
        request.recv_end_ns = perf_counter_ns()
        keep_alive = (parser.get_http_version() != "1.0" and parser.should_keep_alive()
                      and not self._close_after)
        self._close_after = False
        if self.busy:
            # Pipelined behind a request still being answered: answers go out in order.
            self._pipeline.append((request, keep_alive))
            self._pause_reading()
            return
        self._start(request, keep_alive)

    # -- answering -----------------------------------------------------------------------------

    def _start(self, request: Request, keep_alive: bool) -> None:
        self.busy = True
        self._keep_alive = keep_alive and not self._endpoint.stopping
        self._head = request.method == b"HEAD"
        if request.too_large:
            return self._refuse_too_large()
        try:
            self._handler(self, request)
        except Exception:
            log.exception("HTTP %s %s failed", request.method, request.raw_path)
            self._abort(_INTERNAL_ERROR)

    def _refuse_too_large(self) -> None:
        limit = self._max_input_size
        self.respond(400, _too_large_headers(limit), _too_large_body(limit))

    @property
    def closed(self) -> bool:
        return self._closed

    def respond(self, status: int, headers: bytes, body: Any = b"",
                parts: list[Any] | None = None) -> None:
        """Send the answer to the current request: `headers` are whole header lines
        (b"name: value\r\n" each, content-length included), then `body`, or the buffers in
        `parts` one after the other. Past JOIN_LIMIT bytes they are written as they are,
        behind the head (a large body is not copied); below it, joined into one write."""
        if not self.busy:
            return
        self.busy = False
        self.pending = None
        transport = self.transport
        if self._closed or transport is None or transport.is_closing():
            return
        if not self._keep_alive:
            headers += b"connection: close\r\n"
        head = STATUS_LINES[status] + headers + b"\r\n"
        buffers = [body] if parts is None else parts
        if self._head:
            transport.write(head)
        elif sum(len(buffer) for buffer in buffers) > JOIN_LIMIT:
            transport.writelines([head, *buffers])
        else:
            transport.write(b"".join([head, *buffers]))
        self._finished()

    def start_stream(self, status: int, headers: bytes) -> None:
        """Begin a streamed answer to the current request (chunked transfer encoding):
        `headers` as for `respond`, without content-length; then `send_chunk` any number of
        times and `end_stream` once."""
        transport = self.transport
        if not self.busy or self._closed or transport is None or transport.is_closing():
            return
        self._streaming = True
        if not self._keep_alive:
            headers += b"connection: close\r\n"
        transport.write(STATUS_LINES[status] + headers + b"transfer-encoding: chunked\r\n\r\n")

    def send_chunk(self, data: bytes) -> None:
        """One chunk of the streamed answer (dropped once the client has gone)."""
        transport = self.transport
        if not self._streaming or not data or transport is None or transport.is_closing():
            return
        transport.write(b"%x\r\n%s\r\n" % (len(data), data))

    def end_stream(self) -> None:
        """The streamed answer is complete: the last chunk, then the next request."""
        if not self._streaming:
            return
        self._streaming = False
        self.busy = False
        self.pending = None
        transport = self.transport
        if self._closed or transport is None or transport.is_closing():
            return
        transport.write(b"0\r\n\r\n")
        self._finished()

    def _finished(self) -> None:
        self.idle_since = self.loop.time()
        if not self._keep_alive:
            self.close()
            return
        if self._pipeline:
            request, keep_alive = self._pipeline.popleft()
            if not self._pipeline and not self._writing_paused:
                self._resume_reading()
            self._start(request, keep_alive)

    def refuse(self, answer: bytes) -> None:
        """Refuse the request being read and close (a HEAD's refusal has no body)."""
        self._close_with(_without_body(answer) if self._parsing_head else answer)

    def _abort(self, answer: bytes) -> None:
        """Give up on the request being answered and close (a HEAD's answer has no body)."""
        self._close_with(_without_body(answer) if self._head else answer)

    def _close_with(self, answer: bytes) -> None:
        """Write a final answer and close the connection."""
        self.busy = False
        self._pipeline.clear()
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.write(answer)
        self.close()

    def close(self) -> None:
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.close()

    def _pause_reading(self) -> None:
        if not self._reading_paused and self.transport is not None:
            self._reading_paused = True
            self.transport.pause_reading()

    def _resume_reading(self) -> None:
        if self._reading_paused and self.transport is not None:
            self._reading_paused = False
            self.transport.resume_reading()

    # -- stopping ------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """The endpoint is stopping: close now if idle, else after the current answer."""
        if self.busy:
            self._keep_alive = False
            self._pipeline.clear()
        else:
            self.close()

    def cancel(self) -> None:
        """The endpoint gives up on the answer being waited for: mark its request cancelled
        and answer 500, as an ASGI server cancelling the request's task would."""
        if not self.busy:
            return
        pending, self.pending = self.pending, None
        if pending is not None:
            pending.cancelled = True
        if self._streaming:
            # Mid-stream, a status line can no longer be sent: the stream just ends.
            self.busy = False
            self.close()
            return
        self._abort(_INTERNAL_ERROR)


__all__ = ["STATUS_LINES", "ConnectionHost", "Handler", "HttpConnection", "Request"]
