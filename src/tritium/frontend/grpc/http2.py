"""HTTP/2 (RFC 9113) as gRPC uses it, on an asyncio protocol: frames, streams, flow control.

grpcio's server spends about 280 us of one core per unary call (measured: a grpc.aio server that
answers ModelInfer with a constant message peaks near 3,500 calls/s on one core); this framing
layer costs a few tens of microseconds, so the gRPC frontend can be as fast as the HTTP one.
Header blocks are gathered and decoded by `http2_headers` (HPACK, with a per-connection cache);
what this side sends is encoded without indexing, so those blocks are constants. Frames out
(one write per turn of the loop, DATA within the peer's windows) are `http2_output`'s, keepalive
pings and the connection's maximum age `http2_keepalive`'s.

What a client may ask of the server (streams, header sizes, windows, control-frame rates,
buffered output, keepalive) is bounded by `http2_limits.H2Limits`; abuse ends the connection
with GOAWAY ENHANCE_YOUR_CALM.

The connection hands each stream to a `StreamHandler` (the gRPC layer): its headers, each DATA
payload, its end and its reset; the handler answers through `send_headers`, `send_data` and
`reset`. Only what a gRPC server needs is here: no server push, no priorities, no upgrade
from HTTP/1.1.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import cast

from .http2_frames import (
    ACK,
    CONTINUATION,
    DATA,
    DEFAULT_FRAME,
    DEFAULT_WINDOW,
    END_STREAM,
    ENHANCE_YOUR_CALM,
    FLOW_CONTROL_ERROR,
    FRAME_HEAD,
    FRAME_SIZE_ERROR,
    GOAWAY,
    HEADERS,
    MAX_FRAME,
    MAX_SETTINGS_ENTRIES,
    MAX_WINDOW,
    PADDED,
    PING,
    PREFACE,
    PROTOCOL_ERROR,
    PUSH_PROMISE,
    REFUSED_STREAM,
    RST_STREAM,
    SETTING,
    SETTINGS,
    SETTINGS_ACK,
    SETTINGS_INITIAL_WINDOW_SIZE,
    SETTINGS_MAX_FRAME_SIZE,
    U32,
    WINDOW_UPDATE,
    H2ConnectionError,
    encode_headers,
    frame,
    server_preface,
    unpad,
)
from .http2_headers import HeaderBlocks
from .http2_keepalive import Keepalive
from .http2_limits import H2Limits, RateLimit
from .http2_output import H2Output, H2Stream, StreamHandler

log = logging.getLogger("tritium.frontend.http2")

# Seconds of frame handling in one turn of the event loop before the other connections get
# theirs.
_TURN = 0.005



# Called for each new stream: (connection, stream, decoded headers) -> its handler, or None
# once the connection has answered the stream itself.
StreamStarter = Callable[["H2Connection", H2Stream, list[tuple[str, str]]], "StreamHandler | None"]


class H2Connection(H2Output, asyncio.Protocol):
    """The server side of one HTTP/2 connection: frames in here, frames out in `H2Output`."""

    def __init__(self, start_stream: StreamStarter, on_close: Callable[[H2Connection], None],
                 limits: H2Limits | None = None) -> None:
        self._start_stream = start_stream
        self._on_close = on_close
        self.limits = limits = limits or H2Limits()
        self.transport: asyncio.Transport | None = None
        self.peer = ""
        self._buffer = bytearray()
        self._preface_seen = False
        self.streams: dict[int, H2Stream] = {}
        self._last_stream_id = 0
        self._send_window = DEFAULT_WINDOW
        self._initial_send_window = DEFAULT_WINDOW
        self._max_send_frame = DEFAULT_FRAME
        self._recv_window = max(limits.connection_window, DEFAULT_WINDOW)
        self._released = 0
        # Frames not yet written: gathered while input is handled and written at its end;
        # answers in a burst's doubling writes (http2_output).
        self._pending: list[bytes] = []
        self._handling_input = False
        self._burst_written = self._burst_waiting = 0
        # Stream handlers whose work has not finished (a reset stream's too): while as many run
        # as streams may be open, nothing more is read (resetting streams frees nothing: Rapid
        # Reset).
        self.running = 0
        self._settings_acked = False
        self._reading = True
        self._turn_pending = False
        # Request bytes the stream handlers hold (partial and queued messages), which they
        # keep under `limits.max_buffered_input`.
        self.buffered_input = 0
        self._resets = RateLimit(limits.resets)
        self._settings_rate = RateLimit(limits.settings)
        self._priorities = RateLimit(limits.priorities)
        self._pings = RateLimit(limits.pings)
        self._empty = RateLimit(limits.empty_frames)
        self.header_blocks = HeaderBlocks(limits, self._empty)
        self._keepalive = Keepalive(self)
        self._write_paused = False
        self.closing = False
        self.closed = False

    # -- asyncio.Protocol ----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport = cast(asyncio.Transport, transport)  # a stream transport
        self._loop = asyncio.get_running_loop()
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple) and len(peer) >= 2:
            host = peer[0]
            self.peer = f"ipv6:[{host}]:{peer[1]}" if ":" in host else f"ipv4:{host}:{peer[1]}"
        transport.write(server_preface(self.limits))
        self._keepalive.start()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._keepalive.stop()
        streams, self.streams = self.streams, {}
        for stream in streams.values():
            if not stream.closed:
                self._abandon(stream)
        self._on_close(self)

    def pause_writing(self) -> None:
        """The client does not read what it is sent: read nothing more from it until it does
        (its requests would only add answers to the pile); DATA waits in the streams."""
        self._write_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        self._update_reading()
        if not self.closed:
            self._flush_all()

    def handler_started(self) -> None:
        self.running += 1
        self._update_reading()

    def handler_finished(self) -> None:
        self.running -= 1
        self._update_reading()

    def _update_reading(self) -> None:
        reading = not self._write_paused and not self._turn_pending \
            and self.running < self.limits.max_concurrent_streams
        if reading != self._reading and self.transport is not None and not self.closed:
            self._reading = reading
            if reading:
                self.transport.resume_reading()
            else:
                self.transport.pause_reading()

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return  # after GOAWAY, until the socket closes
        self._buffer += data
        if not self._turn_pending:
            self._process()

    def _process(self) -> None:
        """Handle the frames received, at most a turn's worth at once: a connection sending
        frames faster than they are handled waits its next turn (unread) while the other
        connections are served."""
        self._turn_pending = False
        if self.closed:
            return
        buffer = self._buffer
        if not self._preface_seen:
            if len(buffer) < len(PREFACE):
                if not PREFACE.startswith(bytes(buffer)):
                    self._fail(PROTOCOL_ERROR)
                return
            if bytes(buffer[:len(PREFACE)]) != PREFACE:
                self._fail(PROTOCOL_ERROR)
                return
            del buffer[:len(PREFACE)]
            self._preface_seen = True
        self._handling_input = True
        position = 0
        size = len(buffer)
        unpack = FRAME_HEAD.unpack_from
        clock = time.perf_counter
        turn_end = clock() + _TURN
        try:
            while size - position >= 9:
                if clock() > turn_end:
                    self._turn_pending = True
                    asyncio.get_running_loop().call_soon(self._process)
                    break
                high, low, kind, flags, stream_id = unpack(buffer, position)
                length = (high << 8) | low
                end = position + 9 + length
                if end > size:
                    break
                if length > MAX_FRAME:
                    self._fail(FRAME_SIZE_ERROR)
                    return
                payload = bytes(buffer[position + 9:end])
                position = end
                self._frame(kind, flags, stream_id & 0x7FFFFFFF, payload)
                if self.closed:
                    return
        except H2ConnectionError as err:
            self._fail(err.code, err.debug)
            return
        finally:
            del buffer[:position]
            self._handling_input = False
            self._write_pending()
            self._update_reading()

    # -- frames in -----------------------------------------------------------------------------

    def _frame(self, kind: int, flags: int, stream_id: int, payload: bytes) -> None:
        blocks = self.header_blocks
        if blocks.continuing is not None and kind != CONTINUATION:
            raise H2ConnectionError(PROTOCOL_ERROR)
        if kind == DATA:
            self._data(flags, stream_id, payload)
        elif kind == HEADERS:
            self._header_block(blocks.headers(flags, stream_id, payload))
        elif kind == CONTINUATION:
            self._header_block(blocks.continuation(flags, stream_id, payload))
        elif kind == WINDOW_UPDATE:
            self._window_update(stream_id, payload)
        elif kind == PING:
            self._ping(flags, stream_id, payload)
        elif kind == SETTINGS:
            if stream_id:
                raise H2ConnectionError(PROTOCOL_ERROR)
            if not flags & ACK:
                self._calm(self._settings_rate)
                self._settings(payload)
            else:
                self._settings_acked = True
        elif kind == RST_STREAM:
            self._rst_stream(stream_id, payload)
        elif kind == GOAWAY:
            self.closing = True
        elif kind == PUSH_PROMISE:
            raise H2ConnectionError(PROTOCOL_ERROR)
        else:  # PRIORITY and unknown frame types are ignored, as the RFC asks; not for free
            self._calm(self._priorities)

    def _calm(self, limit: RateLimit) -> None:
        """Count one frame against its rate; past it the client is told to calm down."""
        if not limit.take():
            raise H2ConnectionError(ENHANCE_YOUR_CALM)

    def _ping(self, flags: int, stream_id: int, payload: bytes) -> None:
        if len(payload) != 8:
            raise H2ConnectionError(FRAME_SIZE_ERROR)
        if stream_id:
            raise H2ConnectionError(PROTOCOL_ERROR)
        if flags & ACK:
            self._keepalive.ping_acked(payload)
            return
        if self._keepalive.ping_received(idle=not self.streams):
            raise H2ConnectionError(ENHANCE_YOUR_CALM, b"too_many_pings")
        self._calm(self._pings)
        self.write(frame(PING, ACK, 0, payload))

    def _rst_stream(self, stream_id: int, payload: bytes) -> None:
        if len(payload) != 4:
            raise H2ConnectionError(FRAME_SIZE_ERROR)
        if stream_id == 0 or stream_id > self._last_stream_id:
            raise H2ConnectionError(PROTOCOL_ERROR)  # an idle stream cannot be reset
        self._calm(self._resets)
        stream = self.streams.get(stream_id)
        if stream is not None and not stream.closed:
            self._abandon(stream)

    def _data(self, flags: int, stream_id: int, payload: bytes) -> None:
        size = len(payload)
        if size > self._recv_window:
            raise H2ConnectionError(FLOW_CONTROL_ERROR)
        self._recv_window -= size
        if not size and not flags & END_STREAM:
            self._calm(self._empty)
        if flags & PADDED:
            payload = unpad(payload)
        stream = self.streams.get(stream_id)
        if stream is None or stream.remote_ended:
            if stream_id > self._last_stream_id or stream_id == 0:
                raise H2ConnectionError(PROTOCOL_ERROR)
            self._release_connection(size)  # a stream already answered or reset: dropped
            return
        if size > stream.recv_window:
            self._release_connection(size)
            self._stream_error(stream, FLOW_CONTROL_ERROR)
            return
        stream.recv_window -= size
        # Padding is nobody's to keep.
        self._release_connection(size - len(payload))
        stream.recv_window += size - len(payload)
        if payload and stream.handler is not None:
            stream.handler.on_data(payload)
        else:
            self.release(stream, len(payload))
        if flags & END_STREAM:
            self._remote_end(stream)

    def release(self, stream: H2Stream, size: int) -> None:
        """`size` bytes of the stream's DATA have been taken by its handler: the client may
        send that much more, on the stream and on the connection (sent by halves, in batches)."""
        self._release_connection(size)
        if stream.closed or stream.remote_ended:
            return
        stream.released += size
        if stream.released >= self.limits.stream_window // 2:
            stream.recv_window += stream.released
            self._data_sent()
            self.write(frame(WINDOW_UPDATE, 0, stream.id, U32.pack(stream.released)))
            stream.released = 0

    def _release_connection(self, size: int) -> None:
        self._released += size
        if self._released >= self.limits.connection_window // 2 and not self.closed:
            self._recv_window += self._released
            self._data_sent()
            self.write(frame(WINDOW_UPDATE, 0, 0, U32.pack(self._released)))
            self._released = 0

    def _header_block(self, complete: tuple[int, bytes, bool] | None) -> None:
        """A complete header block: a new stream's request headers, or a client's trailers."""
        if complete is None:
            return  # CONTINUATION frames are to come
        stream_id, block, ended = complete
        headers = self.header_blocks.decode(block)
        stream = self.streams.get(stream_id)
        if stream is not None:  # trailers from the client: only their END_STREAM matters
            if ended:
                self._remote_end(stream)
            return
        if stream_id <= self._last_stream_id or not stream_id & 1:
            raise H2ConnectionError(PROTOCOL_ERROR)
        self._last_stream_id = stream_id
        limit = self.limits.max_concurrent_streams
        if not self._settings_acked:
            # The client may not know the limit yet (RFC 9113 6.5.3): some slack, not unbounded.
            limit *= 10
        if self.closing or len(self.streams) >= limit:
            # Refusing costs as much as a reset: a client opening streams it knows will be
            # refused spends the same budget (CVE-2019-9514's reset flood).
            self._calm(self._resets)
            self.write(frame(RST_STREAM, 0, stream_id, U32.pack(REFUSED_STREAM)))
            return
        stream = self.streams[stream_id] = H2Stream(stream_id, self._initial_send_window,
                                                    self.limits.stream_window)
        stream.handler = self._start_stream(self, stream, headers)
        if ended:
            self._remote_end(stream)

    def _remote_end(self, stream: H2Stream) -> None:
        if stream.remote_ended:
            return
        stream.remote_ended = True
        if stream.handler is not None and not stream.closed:
            stream.handler.on_end()

    def _window_update(self, stream_id: int, payload: bytes) -> None:
        if len(payload) != 4:
            raise H2ConnectionError(FRAME_SIZE_ERROR)
        increment = U32.unpack(payload)[0] & 0x7FFFFFFF
        if stream_id == 0:
            if not increment:
                raise H2ConnectionError(PROTOCOL_ERROR)
            self._send_window += increment
            if self._send_window > MAX_WINDOW:
                raise H2ConnectionError(FLOW_CONTROL_ERROR)
            self._flush_all()
            return
        if stream_id > self._last_stream_id:
            raise H2ConnectionError(PROTOCOL_ERROR)  # an idle stream
        stream = self.streams.get(stream_id)
        if stream is not None:
            if not increment:
                self._stream_error(stream, PROTOCOL_ERROR)
                return
            stream.send_window += increment
            if stream.send_window > MAX_WINDOW:
                self._stream_error(stream, FLOW_CONTROL_ERROR)
                return
            self._flush(stream)

    def _settings(self, payload: bytes) -> None:
        if len(payload) % 6:
            raise H2ConnectionError(FRAME_SIZE_ERROR)
        if len(payload) > 6 * MAX_SETTINGS_ENTRIES:
            raise H2ConnectionError(ENHANCE_YOUR_CALM)
        for offset in range(0, len(payload), 6):
            key, value = SETTING.unpack_from(payload, offset)
            if key == SETTINGS_INITIAL_WINDOW_SIZE:
                if value > MAX_WINDOW:
                    raise H2ConnectionError(FLOW_CONTROL_ERROR)
                delta = value - self._initial_send_window
                self._initial_send_window = value
                for stream in self.streams.values():
                    stream.send_window += delta
            elif key == SETTINGS_MAX_FRAME_SIZE:
                if not DEFAULT_FRAME <= value <= MAX_FRAME:
                    raise H2ConnectionError(PROTOCOL_ERROR)
                self._max_send_frame = value
        self.write(SETTINGS_ACK)
        self._flush_all()


__all__ = ["H2Connection", "H2Stream", "StreamHandler", "encode_headers", "frame"]
