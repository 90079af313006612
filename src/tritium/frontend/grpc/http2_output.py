"""Frames out on one HTTP/2 connection: the streams' answers (HEADERS, DATA within the peer's
flow-control windows, trailers), resets, GOAWAY, and how they are written.

Frames sent while input is handled are gathered and written at its end. Those sent from
elsewhere (answers, which come in bursts: a batch's requests are answered in one turn of the
event loop) leave in writes that double: the burst's first answer at once, the next when one
waits, then two, four, ... and whatever is left at the end of the turn. The client starts on
the first answers (and sends its next requests) while the server is still encoding the rest,
yet a burst of n answers costs about log2(n) writes, not n. Writing a whole burst at the end
of the turn cost the first answer the encoding of all the others and left the server's core
idle ~11 % of the time at 32 unary calls on one connection (the client turned the answers
around only after the last was written).

DATA beyond the windows waits in its stream for WINDOW_UPDATE; a client that does not read may
not make the server hold more than `H2Limits.max_buffered_output`. It waits as the buffers it
was sent in, uncopied, and a large flush of it is written as frame heads and slices of those
buffers: copied into a waiting bytearray, sliced into frames and joined, a 40 MB answer cost
the event loop four copies of itself (~90 ms).

`H2Output` is the output half of `http2.H2Connection` (a mixin: the state is the
connection's, set up in its __init__).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import TYPE_CHECKING, Any, Protocol

from .http2_frames import (
    CANCEL,
    DATA,
    END_HEADERS,
    END_STREAM,
    GOAWAY,
    HEADERS,
    NO_ERROR,
    RST_STREAM,
    U32,
    frame,
    frame_head,
)
from .http2_limits import H2Limits

if TYPE_CHECKING:
    from .http2_keepalive import Keepalive

log = logging.getLogger("tritium.frontend.http2")

# Seconds a failed connection stays half-closed so that its GOAWAY arrives before the socket
# closes.
_LINGER = 1.0
# A flush of waiting DATA this large is written as its pieces, not joined into one buffer.
_WRITE_APART = 64 * 1024


class StreamHandler(Protocol):
    """The gRPC layer's side of one stream."""

    def on_data(self, data: bytes) -> None:
        """A DATA payload; the handler gives its bytes back with `H2Connection.release` once
        it has taken them (that reopens the client's window)."""

    def on_end(self) -> None: ...
    def on_reset(self) -> None: ...


class PendingData:
    """A stream's DATA waiting for the peer's window: the buffers it was sent in, uncopied,
    taken from the front a window's worth at a time."""

    __slots__ = ("_pieces", "_size")

    def __init__(self) -> None:
        self._pieces: deque[memoryview] = deque()
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def append(self, data: Any) -> None:
        piece = memoryview(data).cast("B")
        if len(piece):
            self._pieces.append(piece)
            self._size += len(piece)

    def take(self, size: int) -> list[memoryview]:
        """The first `size` bytes (at most what waits), as slices of the buffers."""
        pieces = []
        size = min(size, self._size)
        self._size -= size
        while size:
            piece = self._pieces[0]
            if len(piece) <= size:
                pieces.append(self._pieces.popleft())
                size -= len(piece)
            else:
                pieces.append(piece[:size])
                self._pieces[0] = piece[size:]
                size = 0
        return pieces

    def clear(self) -> None:
        self._pieces.clear()
        self._size = 0


class H2Stream:
    """One stream: its windows and anything waiting for the peer to open its send window."""

    __slots__ = ("id", "handler", "send_window", "pending", "pending_end", "closed",
                 "recv_window", "released", "remote_ended", "headers_sent")

    def __init__(self, stream_id: int, send_window: int, recv_window: int) -> None:
        self.id = stream_id
        self.handler: StreamHandler | None = None
        self.send_window = send_window
        self.pending = PendingData()  # DATA waiting for window
        self.pending_end: bytes | None = None  # trailers to send once `pending` is out
        self.closed = False
        self.recv_window = recv_window  # what the client may still send
        self.released = 0  # taken by the handler, not yet given back to the client
        self.remote_ended = False
        self.headers_sent = False



class H2Output:
    """Frames out (see the module docstring)."""

    limits: H2Limits
    transport: asyncio.Transport | None
    peer: str
    streams: dict[int, H2Stream]
    closing: bool
    closed: bool
    _loop: asyncio.AbstractEventLoop
    _buffer: bytearray
    _reading: bool
    _last_stream_id: int
    _send_window: int
    _max_send_frame: int
    _pending: list[bytes]
    _handling_input: bool
    _burst_written: int  # answers of the burst under way written so far (0: none under way)
    _burst_waiting: int  # answers of the burst pending since its last write
    _write_paused: bool
    _keepalive: Keepalive

    def write(self, *data: bytes) -> None:
        """Queue bytes (one frame, or a frame's head and payload, ...) for the next write."""
        if self.closed or self.transport is None:
            return
        self._pending += data
        if self._handling_input:
            return
        if self._burst_written:
            # Within a burst, a write each time as many answers wait as have been written.
            self._burst_waiting += 1
            if self._burst_waiting >= self._burst_written:
                self._burst_written += self._burst_waiting
                self._burst_waiting = 0
                self._write_pending()
            return
        # The first answer of a burst goes at once (a lone stream's answer: a burst of one).
        self._write_pending()
        if len(self.streams) > 1:
            self._burst_written = 1
            self._burst_waiting = 0
            self._loop.call_soon(self._end_burst)

    def _end_burst(self) -> None:
        """The loop's turn is over: what the burst still holds goes out."""
        self._burst_written = 0
        self._write_pending()

    def _write_pending(self) -> None:
        """Write the pending frames, in the order they were sent, in one write."""
        pending = self._pending
        if not pending:
            return
        data = b"".join(pending) if len(pending) > 1 else pending[0]
        pending.clear()
        if not self.closed and self.transport is not None:
            self.transport.write(data)

    def send_headers(self, stream: H2Stream, block: bytes, end_stream: bool = False) -> None:
        """Response headers (or, with end_stream, a trailers-only answer)."""
        if stream.closed:
            return
        stream.headers_sent = True
        self._data_sent()
        self.write(frame(HEADERS, END_HEADERS | (END_STREAM if end_stream else 0), stream.id,
                          block))
        if end_stream:
            self._close_stream(stream)

    def send_data(self, stream: H2Stream, *data: bytes, trailers: bytes | None = None,
                  headers: bytes | None = None) -> None:
        """DATA (the buffers `data`, one after the other) within the peer's windows (the rest
        waits for WINDOW_UPDATE), optionally after `headers` and followed by `trailers` (which
        end the stream), in one write when it fits."""
        if stream.closed:
            return
        self._data_sent()
        # Frame heads and payloads are joined once, when the connection's output is written.
        parts: list[bytes] = []
        if headers is not None:
            stream.headers_sent = True
            parts += (frame_head(HEADERS, END_HEADERS, stream.id, len(headers)), headers)
        size = sum(map(len, data))
        if not stream.pending and stream.pending_end is None \
                and size <= self._max_send_frame and size <= stream.send_window \
                and size <= self._send_window and not self._write_paused:
            stream.send_window -= size
            self._send_window -= size
            parts += (frame_head(DATA, 0, stream.id, size), *data)
            if trailers is not None:
                parts += (frame_head(HEADERS, END_HEADERS | END_STREAM, stream.id,
                                     len(trailers)), trailers)
            self.write(*parts)
            if trailers is not None:
                self._close_stream(stream)
            return
        for piece in data:
            stream.pending.append(piece)
        if parts:
            self.write(*parts)
        if trailers is not None:
            stream.pending_end = trailers
        self._flush(stream)
        if stream.pending and \
                self._buffered_output() - size > self.limits.max_buffered_output:
            # A client that does not read may not make the server hold its answers forever
            # (one message alone, however large, may wait: its size is the call's business).
            log.debug("HTTP/2: %s reads too slowly, stream %d cancelled", self.peer, stream.id)
            self._stream_error(stream, CANCEL)

    def send_trailers(self, stream: H2Stream, trailers: bytes) -> None:
        if stream.closed:
            return
        if stream.pending:
            stream.pending_end = trailers
            self._flush(stream)
            return
        self._data_sent()
        self.write(frame(HEADERS, END_HEADERS | END_STREAM, stream.id, trailers))
        self._close_stream(stream)

    def _buffered_output(self) -> int:
        held = sum(len(stream.pending) for stream in self.streams.values())
        if self.transport is not None:
            held += self.transport.get_write_buffer_size()
        return held

    def _flush(self, stream: H2Stream) -> None:
        pending = stream.pending
        parts: list[Any] = []
        flushed = 0
        while pending and not self._write_paused:
            room = min(stream.send_window, self._send_window, self._max_send_frame, len(pending))
            if room <= 0:
                break
            stream.send_window -= room
            self._send_window -= room
            parts.append(frame_head(DATA, 0, stream.id, room))
            parts += pending.take(room)
            flushed += room
        ended = False
        if not pending and stream.pending_end is not None:
            parts.append(frame(HEADERS, END_HEADERS | END_STREAM, stream.id, stream.pending_end))
            stream.pending_end = None
            ended = True
        if parts:
            # DATA that waited for the client's window (all of an answer larger than it) counts
            # as data sent, as gRPC core's writes count it: a client's pings during a long
            # download are no strikes.
            self._data_sent()
            if flushed < _WRITE_APART:
                self.write(b"".join(parts))
            elif not self.closed and self.transport is not None:
                self._write_pending()  # what was sent before goes first
                self.transport.writelines(parts)
        if ended:
            self._close_stream(stream)

    def reset(self, stream: H2Stream, code: int = CANCEL) -> None:
        if stream.closed:
            return
        self.write(frame(RST_STREAM, 0, stream.id, U32.pack(code)))
        self._close_stream(stream, reset=False)

    def _stream_error(self, stream: H2Stream, code: int) -> None:
        """End one stream for a fault of its own (RST_STREAM); its handler is told."""
        if stream.closed:
            return
        self.write(frame(RST_STREAM, 0, stream.id, U32.pack(code)))
        self._abandon(stream)

    def _abandon(self, stream: H2Stream) -> None:
        """Close a stream that was not answered (reset by either side, or its connection lost)
        and tell its handler."""
        handler = stream.handler
        self._close_stream(stream, reset=False)
        if handler is not None:
            handler.on_reset()

    def _close_stream(self, stream: H2Stream, reset: bool = True) -> None:
        stream.closed = True
        stream.pending.clear()
        # The handler (a gRPC call) refers to its stream: dropped here, the pair is freed as
        # soon as the call lets go of it, not left as a cycle for the garbage collector, whose
        # collections (one every ~250 requests, ~130 us each) were the tail of gRPC latency.
        stream.handler = None
        self.streams.pop(stream.id, None)
        if reset and not stream.remote_ended:
            # Answered before the client finished sending: it may stop (RFC 9113, 8.1).
            self.write(frame(RST_STREAM, 0, stream.id, U32.pack(NO_ERROR)))

    def go_away(self, debug: bytes = b"") -> None:
        """No new streams: the ones already open may finish."""
        if not self.closing and not self.closed:
            self.closing = True
            self.write(frame(GOAWAY, 0, 0, U32.pack(self._last_stream_id) + U32.pack(NO_ERROR)
                              + debug))

    def close(self) -> None:
        if self.transport is not None and not self.closed:
            self._write_pending()  # what was sent goes out before the close
            self.transport.close()

    def _fail(self, code: int, debug: bytes = b"") -> None:
        log.debug("HTTP/2 connection from %s failed with error %d %s", self.peer, code, debug)
        if self.transport is not None and not self.closed:
            # What was answered before the fault goes out first.
            answered = b"".join(self._pending)
            self._pending.clear()
            self.transport.write(answered + frame(
                GOAWAY, 0, 0, U32.pack(self._last_stream_id) + U32.pack(code) + debug))
            self._linger(self.transport)
        self.closed = True

    def _linger(self, transport: asyncio.Transport) -> None:
        """Close after the GOAWAY has had time to arrive: closing a socket with unread input
        resets it, and a reset can destroy the GOAWAY before the client reads its reason
        (grpc clients back off on "too_many_pings"). What the client sends meanwhile is
        dropped unread."""
        if not transport.can_write_eof():
            transport.close()
            return
        self._buffer.clear()
        if not self._reading:
            transport.resume_reading()  # drained, not left to reset the socket
        transport.write_eof()
        asyncio.get_running_loop().call_later(_LINGER, transport.close)

    def _data_sent(self) -> None:
        """Headers, DATA or a WINDOW_UPDATE go out: ping strikes start over (gRPC core resets
        its ping clock on each of them)."""
        self._keepalive.data_sent()

    def _flush_all(self) -> None:
        for stream in list(self.streams.values()):
            if stream.pending or stream.pending_end is not None:
                self._flush(stream)
