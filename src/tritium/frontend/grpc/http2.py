"""HTTP/2 (RFC 9113) as gRPC uses it, on an asyncio protocol: frames, streams, flow control.

grpcio's server spends about 280 us of one core per unary call (measured: a grpc.aio server that
answers ModelInfer with a constant message peaks near 3,500 calls/s on one core); this framing
layer costs a few tens of microseconds, so the gRPC frontend can be as fast as the HTTP one.
HPACK decoding is the `hpack` library's (python-hyper); a header block is decoded once per
connection and its result reused while the dynamic table stays as it was (what clients send for
repeated calls: indexed fields): the table counts its insertions and resizes, and any change
empties the cache, since an indexed field means what the table holds at that moment. What this
side sends is encoded without indexing, so those blocks are constants.

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
import random
import time
from collections.abc import Callable
from typing import Protocol, cast

import hpack

from .http2_frames import (
    ACK,
    CANCEL,
    COMPRESSION_ERROR,
    CONTINUATION,
    DATA,
    DEFAULT_FRAME,
    DEFAULT_WINDOW,
    END_HEADERS,
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
    NO_ERROR,
    PADDED,
    PING,
    PREFACE,
    PRIORITY_FLAG,
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
    CountingTable,
    encode_headers,
    frame,
    server_preface,
    unpad,
)
from .http2_limits import H2Limits, PingPolicy, RateLimit

log = logging.getLogger("tritium.frontend.http2")

# Header blocks whose decoding is remembered per connection.
_HEADER_CACHE = 64
# Seconds of frame handling in one turn of the event loop before the other connections get
# theirs.
_TURN = 0.005
# Seconds a failed connection stays half-closed so that its GOAWAY arrives before the socket
# closes.
_LINGER = 1.0
# The payload of the server's keepalive pings.
_KEEPALIVE_PING = b"tritiumk"



class StreamHandler(Protocol):
    """The gRPC layer's side of one stream."""

    def on_data(self, data: bytes) -> None:
        """A DATA payload; the handler gives its bytes back with `H2Connection.release` once
        it has taken them (that reopens the client's window)."""

    def on_end(self) -> None: ...
    def on_reset(self) -> None: ...


class H2Stream:
    """One stream: its windows and anything waiting for the peer to open its send window."""

    __slots__ = ("id", "handler", "send_window", "pending", "pending_end", "closed",
                 "recv_window", "released", "remote_ended", "headers_sent")

    def __init__(self, stream_id: int, send_window: int, recv_window: int) -> None:
        self.id = stream_id
        self.handler: StreamHandler | None = None
        self.send_window = send_window
        self.pending = bytearray()  # DATA waiting for window
        self.pending_end: bytes | None = None  # trailers to send once `pending` is out
        self.closed = False
        self.recv_window = recv_window  # what the client may still send
        self.released = 0  # taken by the handler, not yet given back to the client
        self.remote_ended = False
        self.headers_sent = False


# Called for each new stream: (connection, stream, decoded headers) -> its handler, or None
# once the connection has answered the stream itself.
StreamStarter = Callable[["H2Connection", H2Stream, list[tuple[str, str]]], "StreamHandler | None"]


class H2Connection(asyncio.Protocol):
    """The server side of one HTTP/2 connection."""

    def __init__(self, start_stream: StreamStarter, on_close: Callable[[H2Connection], None],
                 limits: H2Limits | None = None) -> None:
        self._start_stream = start_stream
        self._on_close = on_close
        self.limits = limits = limits or H2Limits()
        self.transport: asyncio.Transport | None = None
        self.peer = ""
        self._buffer = bytearray()
        self._preface_seen = False
        self._decoder = hpack.Decoder(max_header_list_size=2 * limits.max_header_list_size)
        self._decoder.header_table = self._table = CountingTable()
        self._decoder.max_allowed_table_size = 65536
        self._header_cache: dict[bytes, list[tuple[str, str]]] = {}
        self._cache_generation = 0
        self.streams: dict[int, H2Stream] = {}
        self._last_stream_id = 0
        # (stream id, block so far, END_STREAM, CONTINUATION frames so far)
        self._continuing: tuple[int, bytearray, bool, int] | None = None
        self._send_window = DEFAULT_WINDOW
        self._initial_send_window = DEFAULT_WINDOW
        self._max_send_frame = DEFAULT_FRAME
        self._recv_window = max(limits.connection_window, DEFAULT_WINDOW)
        self._released = 0
        # Frames not yet written: gathered while input is handled and written at its end, and
        # those sent from elsewhere (answers) written at the end of the loop's turn, so that
        # the answers to a batch of requests leave in one write, not one each.
        self._pending: list[bytes] = []
        self._handling_input = False
        self._flush_scheduled = False
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
        self._ping_policy = PingPolicy(limits.keepalive)
        self._pings_without_data = 0
        self._timers: dict[str, asyncio.TimerHandle] = {}
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
        keepalive = self.limits.keepalive
        self._schedule("keepalive", keepalive.keepalive_time_ms, self._keepalive)
        if keepalive.max_connection_age_ms is not None:
            # gRPC core spreads connection ages by +-10% so that clients do not reconnect at once.
            age = keepalive.max_connection_age_ms * random.uniform(0.9, 1.1)
            self._schedule("age", age, self._max_age_reached)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        streams, self.streams = self.streams, {}
        for stream in streams.values():
            if not stream.closed and stream.handler is not None:
                stream.closed = True
                stream.handler.on_reset()
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
        except _ConnectionError as err:
            self._fail(err.code, err.debug)
            return
        finally:
            del buffer[:position]
            self._handling_input = False
            self._write_pending()
            self._update_reading()

    # -- frames in -----------------------------------------------------------------------------

    def _frame(self, kind: int, flags: int, stream_id: int, payload: bytes) -> None:
        if self._continuing is not None and kind != CONTINUATION:
            raise _ConnectionError(PROTOCOL_ERROR)
        if kind == DATA:
            self._data(flags, stream_id, payload)
        elif kind == HEADERS:
            self._headers(flags, stream_id, payload)
        elif kind == CONTINUATION:
            self._continuation(flags, stream_id, payload)
        elif kind == WINDOW_UPDATE:
            self._window_update(stream_id, payload)
        elif kind == PING:
            self._ping(flags, stream_id, payload)
        elif kind == SETTINGS:
            if stream_id:
                raise _ConnectionError(PROTOCOL_ERROR)
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
            raise _ConnectionError(PROTOCOL_ERROR)
        else:  # PRIORITY and unknown frame types are ignored, as the RFC asks; not for free
            self._calm(self._priorities)

    def _calm(self, limit: RateLimit) -> None:
        """Count one frame against its rate; past it the client is told to calm down."""
        if not limit.take():
            raise _ConnectionError(ENHANCE_YOUR_CALM)

    def _ping(self, flags: int, stream_id: int, payload: bytes) -> None:
        if len(payload) != 8:
            raise _ConnectionError(FRAME_SIZE_ERROR)
        if stream_id:
            raise _ConnectionError(PROTOCOL_ERROR)
        if flags & ACK:
            if payload == _KEEPALIVE_PING:
                self._cancel("keepalive_timeout")
            return
        if self._ping_policy.received(idle=not self.streams):
            raise _ConnectionError(ENHANCE_YOUR_CALM, b"too_many_pings")
        self._calm(self._pings)
        self._write(frame(PING, ACK, 0, payload))

    def _rst_stream(self, stream_id: int, payload: bytes) -> None:
        if len(payload) != 4:
            raise _ConnectionError(FRAME_SIZE_ERROR)
        if stream_id == 0 or stream_id > self._last_stream_id:
            raise _ConnectionError(PROTOCOL_ERROR)  # an idle stream cannot be reset
        self._calm(self._resets)
        stream = self.streams.pop(stream_id, None)
        if stream is not None and not stream.closed:
            stream.closed = True
            stream.pending.clear()
            if stream.handler is not None:
                stream.handler.on_reset()

    def _data(self, flags: int, stream_id: int, payload: bytes) -> None:
        size = len(payload)
        if size > self._recv_window:
            raise _ConnectionError(FLOW_CONTROL_ERROR)
        self._recv_window -= size
        if not size and not flags & END_STREAM:
            self._calm(self._empty)
        if flags & PADDED:
            payload = _unpadded(payload)
        stream = self.streams.get(stream_id)
        if stream is None or stream.remote_ended:
            if stream_id > self._last_stream_id or stream_id == 0:
                raise _ConnectionError(PROTOCOL_ERROR)
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
            self._write(frame(WINDOW_UPDATE, 0, stream.id, U32.pack(stream.released)))
            stream.released = 0

    def _release_connection(self, size: int) -> None:
        self._released += size
        if self._released >= self.limits.connection_window // 2 and not self.closed:
            self._recv_window += self._released
            self._write(frame(WINDOW_UPDATE, 0, 0, U32.pack(self._released)))
            self._released = 0

    def _headers(self, flags: int, stream_id: int, payload: bytes) -> None:
        if stream_id == 0:
            raise _ConnectionError(PROTOCOL_ERROR)
        if flags & PADDED:
            payload = _unpadded(payload)
        if flags & PRIORITY_FLAG:
            payload = payload[5:]
        if not flags & END_HEADERS:
            self._check_block(len(payload), 0)
            self._continuing = (stream_id, bytearray(payload), bool(flags & END_STREAM), 0)
            return
        self._header_block(stream_id, payload, bool(flags & END_STREAM))

    def _continuation(self, flags: int, stream_id: int, payload: bytes) -> None:
        if self._continuing is None or self._continuing[0] != stream_id:
            raise _ConnectionError(PROTOCOL_ERROR)
        _, block, ended, count = self._continuing
        block.extend(payload)
        self._check_block(len(block), count + 1)
        if not payload and not flags & END_HEADERS:
            self._calm(self._empty)
        self._continuing = (stream_id, block, ended, count + 1)
        if flags & END_HEADERS:
            self._continuing = None
            self._header_block(stream_id, bytes(block), ended)

    def _check_block(self, size: int, continuations: int) -> None:
        """A header block being gathered may not outgrow twice the advertised header-list size
        (what it decodes to is never smaller than the block, bar Huffman's 5/8) nor take more
        than its share of CONTINUATION frames: the CONTINUATION flood ends here."""
        limits = self.limits
        if size > 2 * limits.max_header_list_size or continuations > limits.max_continuations:
            raise _ConnectionError(ENHANCE_YOUR_CALM)

    def _header_block(self, stream_id: int, block: bytes, ended: bool) -> None:
        headers = self._decode(block)
        stream = self.streams.get(stream_id)
        if stream is not None:  # trailers from the client: only their END_STREAM matters
            if ended:
                self._remote_end(stream)
            return
        if stream_id <= self._last_stream_id or not stream_id & 1:
            raise _ConnectionError(PROTOCOL_ERROR)
        self._last_stream_id = stream_id
        limit = self.limits.max_concurrent_streams
        if not self._settings_acked:
            # The client may not know the limit yet (RFC 9113 6.5.3): some slack, not unbounded.
            limit *= 10
        if self.closing or len(self.streams) >= limit:
            # Refusing costs as much as a reset: a client opening streams it knows will be
            # refused spends the same budget (CVE-2019-9514's reset flood).
            self._calm(self._resets)
            self._write(frame(RST_STREAM, 0, stream_id, U32.pack(REFUSED_STREAM)))
            return
        stream = self.streams[stream_id] = H2Stream(stream_id, self._initial_send_window,
                                                    self.limits.stream_window)
        stream.handler = self._start_stream(self, stream, headers)
        if ended:
            self._remote_end(stream)

    def _decode(self, block: bytes) -> list[tuple[str, str]]:
        table = self._table
        if table.generation == self._cache_generation:
            cached = self._header_cache.get(block)
            if cached is not None:
                return cached
        try:
            headers = [(bytes(n).decode("latin-1"), bytes(v).decode("latin-1"))
                       for n, v in self._decoder.decode(block, raw=True)]
        except hpack.OversizedHeaderListError:
            raise _ConnectionError(ENHANCE_YOUR_CALM) from None
        except Exception as exc:  # hpack.HPACKError and friends: the connection is unusable
            log.debug("HTTP/2: header block does not decode: %s", exc)
            raise _ConnectionError(COMPRESSION_ERROR) from None
        if table.generation != self._cache_generation:
            # The table changed: every remembered decoding may mean something else now.
            self._header_cache.clear()
            self._cache_generation = table.generation
        elif len(self._header_cache) < _HEADER_CACHE:
            self._header_cache[block] = headers
        return headers

    def _remote_end(self, stream: H2Stream) -> None:
        if stream.remote_ended:
            return
        stream.remote_ended = True
        if stream.handler is not None and not stream.closed:
            stream.handler.on_end()

    def _window_update(self, stream_id: int, payload: bytes) -> None:
        if len(payload) != 4:
            raise _ConnectionError(FRAME_SIZE_ERROR)
        increment = U32.unpack(payload)[0] & 0x7FFFFFFF
        if stream_id == 0:
            if not increment:
                raise _ConnectionError(PROTOCOL_ERROR)
            self._send_window += increment
            if self._send_window > MAX_WINDOW:
                raise _ConnectionError(FLOW_CONTROL_ERROR)
            self._flush_all()
            return
        if stream_id > self._last_stream_id:
            raise _ConnectionError(PROTOCOL_ERROR)  # an idle stream
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

    def _flush_all(self) -> None:
        for stream in list(self.streams.values()):
            if stream.pending or stream.pending_end is not None:
                self._flush(stream)

    def _settings(self, payload: bytes) -> None:
        if len(payload) % 6:
            raise _ConnectionError(FRAME_SIZE_ERROR)
        if len(payload) > 6 * MAX_SETTINGS_ENTRIES:
            raise _ConnectionError(ENHANCE_YOUR_CALM)
        for offset in range(0, len(payload), 6):
            key, value = SETTING.unpack_from(payload, offset)
            if key == SETTINGS_INITIAL_WINDOW_SIZE:
                if value > MAX_WINDOW:
                    raise _ConnectionError(FLOW_CONTROL_ERROR)
                delta = value - self._initial_send_window
                self._initial_send_window = value
                for stream in self.streams.values():
                    stream.send_window += delta
            elif key == SETTINGS_MAX_FRAME_SIZE:
                if not DEFAULT_FRAME <= value <= MAX_FRAME:
                    raise _ConnectionError(PROTOCOL_ERROR)
                self._max_send_frame = value
        self._write(SETTINGS_ACK)
        self._flush_all()

    # -- frames out ----------------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        if self.closed or self.transport is None:
            return
        self._pending.append(data)
        if self._handling_input or self._flush_scheduled:
            return
        if len(self.streams) <= 1:
            # Nothing else under way could join it: waiting for the loop's turn to end would
            # only add a turn to the lone request's latency.
            self._write_pending()
            return
        self._flush_scheduled = True
        self._loop.call_soon(self._write_pending)

    def _write_pending(self) -> None:
        """Write the pending frames, in the order they were sent, in one write."""
        self._flush_scheduled = False
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
        self._write(frame(HEADERS, END_HEADERS | (END_STREAM if end_stream else 0), stream.id,
                          block))
        if end_stream:
            self._close_stream(stream)

    def send_data(self, stream: H2Stream, data: bytes, trailers: bytes | None = None,
                  headers: bytes | None = None) -> None:
        """DATA within the peer's windows (the rest waits for WINDOW_UPDATE), optionally after
        `headers` and followed by `trailers` (which end the stream), in one write when it fits."""
        if stream.closed:
            return
        self._data_sent()
        parts: list[bytes] = []
        if headers is not None:
            stream.headers_sent = True
            parts.append(frame(HEADERS, END_HEADERS, stream.id, headers))
        if stream.pending or stream.pending_end is not None:
            stream.pending += data
        else:
            size = len(data)
            if size <= self._max_send_frame and size <= stream.send_window \
                    and size <= self._send_window and not self._write_paused:
                stream.send_window -= size
                self._send_window -= size
                parts.append(frame(DATA, 0, stream.id, data))
                if trailers is not None:
                    parts.append(frame(HEADERS, END_HEADERS | END_STREAM, stream.id, trailers))
                self._write(b"".join(parts))
                if trailers is not None:
                    self._close_stream(stream)
                return
            stream.pending += data
        if parts:
            self._write(b"".join(parts))
        if trailers is not None:
            stream.pending_end = trailers
        self._flush(stream)
        if stream.pending and \
                self._buffered_output() - len(data) > self.limits.max_buffered_output:
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
        self._write(frame(HEADERS, END_HEADERS | END_STREAM, stream.id, trailers))
        self._close_stream(stream)

    def _buffered_output(self) -> int:
        held = sum(len(stream.pending) for stream in self.streams.values())
        if self.transport is not None:
            held += self.transport.get_write_buffer_size()
        return held

    def _flush(self, stream: H2Stream) -> None:
        pending = stream.pending
        parts: list[bytes] = []
        while pending and not self._write_paused:
            room = min(stream.send_window, self._send_window, self._max_send_frame)
            if room <= 0:
                break
            chunk = bytes(pending[:room])
            del pending[:room]
            stream.send_window -= len(chunk)
            self._send_window -= len(chunk)
            parts.append(frame(DATA, 0, stream.id, chunk))
        ended = False
        if not pending and stream.pending_end is not None:
            parts.append(frame(HEADERS, END_HEADERS | END_STREAM, stream.id, stream.pending_end))
            stream.pending_end = None
            ended = True
        if parts:
            self._write(b"".join(parts))
        if ended:
            self._close_stream(stream)

    def reset(self, stream: H2Stream, code: int = CANCEL) -> None:
        if stream.closed:
            return
        self._write(frame(RST_STREAM, 0, stream.id, U32.pack(code)))
        self._close_stream(stream, reset=False)

    def _stream_error(self, stream: H2Stream, code: int) -> None:
        """End one stream for a fault of its own (RST_STREAM); its handler is told."""
        if stream.closed:
            return
        self.reset(stream, code)
        if stream.handler is not None:
            stream.handler.on_reset()

    def _close_stream(self, stream: H2Stream, reset: bool = True) -> None:
        stream.closed = True
        stream.pending.clear()
        self.streams.pop(stream.id, None)
        if reset and not stream.remote_ended:
            # Answered before the client finished sending: it may stop (RFC 9113, 8.1).
            self._write(frame(RST_STREAM, 0, stream.id, U32.pack(NO_ERROR)))

    def go_away(self, debug: bytes = b"") -> None:
        """No new streams: the ones already open may finish."""
        if not self.closing and not self.closed:
            self.closing = True
            self._write(frame(GOAWAY, 0, 0, U32.pack(self._last_stream_id) + U32.pack(NO_ERROR)
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

    # -- keepalive and connection age (gRPC core's server behaviour) ---------------------------

    def _data_sent(self) -> None:
        self._ping_policy.data_sent()
        self._pings_without_data = 0

    def _schedule(self, name: str, delay_ms: float, callback: Callable[[], None]) -> None:
        self._cancel(name)
        loop = asyncio.get_running_loop()
        self._timers[name] = loop.call_later(delay_ms / 1000.0, callback)

    def _cancel(self, name: str) -> None:
        timer = self._timers.pop(name, None)
        if timer is not None:
            timer.cancel()

    def _keepalive(self) -> None:
        """Every keepalive time: a PING the client must answer within the keepalive timeout
        (only while calls are open unless pings without calls are permitted, and no more than
        the allowed pings without data in between)."""
        if self.closed:
            return
        keepalive = self.limits.keepalive
        self._schedule("keepalive", keepalive.keepalive_time_ms, self._keepalive)
        if not self.streams and not keepalive.keepalive_permit_without_calls:
            return
        most = keepalive.http2_max_pings_without_data
        if most and self._pings_without_data >= most:
            return
        if "keepalive_timeout" in self._timers:
            return  # the last one is still unanswered
        self._pings_without_data += 1
        self._write(frame(PING, 0, 0, _KEEPALIVE_PING))
        self._schedule("keepalive_timeout", keepalive.keepalive_timeout_ms,
                       self._keepalive_expired)

    def _keepalive_expired(self) -> None:
        log.debug("HTTP/2: %s did not answer a keepalive ping: closing", self.peer)
        self._timers.pop("keepalive_timeout", None)
        if self.transport is not None and not self.closed:
            self.transport.abort()

    def _max_age_reached(self) -> None:
        self._timers.pop("age", None)
        self.go_away(b"max_age")
        grace = self.limits.keepalive.max_connection_age_grace_ms
        if grace is not None:
            self._schedule("age_grace", grace, self.close)


class _ConnectionError(Exception):
    def __init__(self, code: int, debug: bytes = b"") -> None:
        super().__init__(code)
        self.code = code
        self.debug = debug


def _unpadded(payload: bytes) -> bytes:
    try:
        return unpad(payload)
    except ValueError:
        raise _ConnectionError(PROTOCOL_ERROR) from None


__all__ = ["H2Connection", "H2Stream", "StreamHandler", "encode_headers", "frame"]
