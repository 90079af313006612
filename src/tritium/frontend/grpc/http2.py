"""HTTP/2 (RFC 9113) as gRPC uses it, on an asyncio protocol: frames, streams, flow control.

grpcio's server spends about 280 us of one core per unary call (measured: a grpc.aio server that
answers ModelInfer with a constant message peaks near 3,500 calls/s on one core); this framing
layer costs a few tens of microseconds, so the gRPC frontend can be as fast as the HTTP one.
HPACK decoding is the `hpack` library's (python-hyper); a header block that leaves the dynamic
table untouched (what clients send for repeated calls: indexed fields) is decoded once per
connection and reused. What this side sends is encoded without indexing, so those blocks are
constants.

The connection hands each stream to a `StreamHandler` (the gRPC layer): its headers, each DATA
payload, its end and its reset; the handler answers through `send_headers`, `send_data` and
`reset`. Only what a gRPC server needs is here: no server push, no priorities, no upgrade
from HTTP/1.1.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Callable
from typing import Protocol, cast

import hpack

log = logging.getLogger("tritium.frontend.http2")

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

# Frame types and flags.
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, \
    CONTINUATION = range(10)
END_STREAM = 0x1
ACK = 0x1
END_HEADERS = 0x4
PADDED = 0x8
PRIORITY_FLAG = 0x20

# Error codes.
NO_ERROR = 0x0
PROTOCOL_ERROR = 0x1
FLOW_CONTROL_ERROR = 0x3
FRAME_SIZE_ERROR = 0x6
REFUSED_STREAM = 0x7
CANCEL = 0x8
COMPRESSION_ERROR = 0x9

# Settings.
SETTINGS_INITIAL_WINDOW_SIZE = 0x4
SETTINGS_MAX_FRAME_SIZE = 0x5

_MAX_WINDOW = 2**31 - 1
_DEFAULT_WINDOW = 65535
_DEFAULT_FRAME = 16384
# The largest frame this side accepts (advertised): big tensors arrive in few frames.
_MAX_FRAME = 2**24 - 1
# Received bytes are given back to the peer's window once this many have been consumed.
_WINDOW_REFILL = 2**30
# Header blocks whose decoding is remembered per connection.
_HEADER_CACHE = 64

_FRAME_HEAD = struct.Struct(">HBBBI")  # length as 16+8 bits, type, flags, stream id
_U32 = struct.Struct(">I")
_SETTING = struct.Struct(">HI")


def frame(kind: int, flags: int, stream_id: int, payload: bytes = b"") -> bytes:
    size = len(payload)
    return struct.pack(">BHBBI", size >> 16, size & 0xFFFF, kind, flags, stream_id) + payload


def encode_headers(headers: list[tuple[str, str]]) -> bytes:
    """A header block of never-indexed literals: it leaves the peer's table alone, so it can be
    built once and sent on any connection."""
    fields = [hpack.NeverIndexedHeaderTuple(name, value) for name, value in headers]
    return hpack.Encoder().encode(fields, huffman=False)


_SERVER_SETTINGS = frame(
    SETTINGS, 0, 0,
    _SETTING.pack(SETTINGS_INITIAL_WINDOW_SIZE, _MAX_WINDOW)
    + _SETTING.pack(SETTINGS_MAX_FRAME_SIZE, _MAX_FRAME),
) + frame(WINDOW_UPDATE, 0, 0, _U32.pack(_MAX_WINDOW - _DEFAULT_WINDOW))
_SETTINGS_ACK = frame(SETTINGS, ACK, 0)


class StreamHandler(Protocol):
    """The gRPC layer's side of one stream."""

    def on_data(self, data: bytes) -> None: ...
    def on_end(self) -> None: ...
    def on_reset(self) -> None: ...


class H2Stream:
    """One stream: its send window and anything waiting for the peer to open it."""

    __slots__ = ("id", "handler", "send_window", "pending", "pending_end", "closed",
                 "received", "remote_ended", "headers_sent")

    def __init__(self, stream_id: int, send_window: int) -> None:
        self.id = stream_id
        self.handler: StreamHandler | None = None
        self.send_window = send_window
        self.pending = bytearray()  # DATA waiting for window
        self.pending_end: bytes | None = None  # trailers to send once `pending` is out
        self.closed = False
        self.received = 0
        self.remote_ended = False
        self.headers_sent = False


# Called for each new stream: (connection, stream, decoded headers) -> its handler, or None
# once the connection has answered the stream itself.
StreamStarter = Callable[["H2Connection", H2Stream, list[tuple[str, str]]], "StreamHandler | None"]


class H2Connection(asyncio.Protocol):
    """The server side of one HTTP/2 connection."""

    def __init__(self, start_stream: StreamStarter, on_close: Callable[[H2Connection], None]
                 ) -> None:
        self._start_stream = start_stream
        self._on_close = on_close
        self.transport: asyncio.Transport | None = None
        self.peer = ""
        self._buffer = bytearray()
        self._preface_seen = False
        self._decoder = hpack.Decoder()
        self._decoder.max_allowed_table_size = 65536
        self._header_cache: dict[bytes, list[tuple[str, str]]] = {}
        self.streams: dict[int, H2Stream] = {}
        self._last_stream_id = 0
        self._continuing: tuple[int, bytearray, bool] | None = None
        self._send_window = _DEFAULT_WINDOW
        self._initial_send_window = _DEFAULT_WINDOW
        self._max_send_frame = _DEFAULT_FRAME
        self._received = 0
        self._out: list[bytes] | None = None  # frames gathered while handling input
        self.closing = False
        self.closed = False

    # -- asyncio.Protocol ----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport = cast(asyncio.Transport, transport)  # a stream transport
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple) and len(peer) >= 2:
            host = peer[0]
            self.peer = f"ipv6:[{host}]:{peer[1]}" if ":" in host else f"ipv4:{host}:{peer[1]}"
        transport.write(_SERVER_SETTINGS)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        streams, self.streams = self.streams, {}
        for stream in streams.values():
            if not stream.closed and stream.handler is not None:
                stream.closed = True
                stream.handler.on_reset()
        self._on_close(self)

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
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
        out: list[bytes] = []
        self._out = out
        position = 0
        size = len(buffer)
        unpack = _FRAME_HEAD.unpack_from
        try:
            while size - position >= 9:
                high, low, kind, flags, stream_id = unpack(buffer, position)
                length = (high << 8) | low
                end = position + 9 + length
                if end > size:
                    break
                if length > _MAX_FRAME:
                    self._fail(FRAME_SIZE_ERROR)
                    return
                payload = bytes(buffer[position + 9:end])
                position = end
                self._frame(kind, flags, stream_id & 0x7FFFFFFF, payload)
                if self.closed:
                    return
        except _ConnectionError as err:
            self._fail(err.code)
            return
        finally:
            del buffer[:position]
            self._out = None
            if out and not self.closed and self.transport is not None:
                self.transport.write(b"".join(out))
        if self._received >= _WINDOW_REFILL:
            self._write(frame(WINDOW_UPDATE, 0, 0, _U32.pack(self._received)))
            self._received = 0

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
            if len(payload) != 8:
                raise _ConnectionError(FRAME_SIZE_ERROR)
            if not flags & ACK:
                self._write(frame(PING, ACK, 0, payload))
        elif kind == SETTINGS:
            if not flags & ACK:
                self._settings(payload)
        elif kind == RST_STREAM:
            stream = self.streams.pop(stream_id, None)
            if stream is not None and not stream.closed:
                stream.closed = True
                if stream.handler is not None:
                    stream.handler.on_reset()
        elif kind == GOAWAY:
            self.closing = True
        elif kind == PUSH_PROMISE:
            raise _ConnectionError(PROTOCOL_ERROR)
        # PRIORITY and unknown frame types are ignored, as the RFC asks.

    def _data(self, flags: int, stream_id: int, payload: bytes) -> None:
        self._received += len(payload)
        if flags & PADDED:
            payload = _unpad(payload)
        stream = self.streams.get(stream_id)
        if stream is None or stream.remote_ended:
            if stream_id > self._last_stream_id or stream_id == 0:
                raise _ConnectionError(PROTOCOL_ERROR)
            return  # a stream already answered or reset: its data is dropped
        stream.received += len(payload)
        if stream.received >= _WINDOW_REFILL and not flags & END_STREAM:
            self._write(frame(WINDOW_UPDATE, 0, stream_id, _U32.pack(stream.received)))
            stream.received = 0
        if payload and stream.handler is not None:
            stream.handler.on_data(payload)
        if flags & END_STREAM:
            self._remote_end(stream)

    def _headers(self, flags: int, stream_id: int, payload: bytes) -> None:
        if stream_id == 0:
            raise _ConnectionError(PROTOCOL_ERROR)
        if flags & PADDED:
            payload = _unpad(payload)
        if flags & PRIORITY_FLAG:
            payload = payload[5:]
        if not flags & END_HEADERS:
            self._continuing = (stream_id, bytearray(payload), bool(flags & END_STREAM))
            return
        self._header_block(stream_id, payload, bool(flags & END_STREAM))

    def _continuation(self, flags: int, stream_id: int, payload: bytes) -> None:
        if self._continuing is None or self._continuing[0] != stream_id:
            raise _ConnectionError(PROTOCOL_ERROR)
        self._continuing[1].extend(payload)
        if flags & END_HEADERS:
            _, block, ended = self._continuing
            self._continuing = None
            self._header_block(stream_id, bytes(block), ended)

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
        if self.closing:
            self._write(frame(RST_STREAM, 0, stream_id, _U32.pack(REFUSED_STREAM)))
            return
        stream = self.streams[stream_id] = H2Stream(stream_id, self._initial_send_window)
        stream.handler = self._start_stream(self, stream, headers)
        if ended:
            self._remote_end(stream)

    def _decode(self, block: bytes) -> list[tuple[str, str]]:
        cached = self._header_cache.get(block)
        if cached is not None:
            return cached
        table = self._decoder.header_table
        before = _table_state(table)
        try:
            headers = [(bytes(n).decode("latin-1"), bytes(v).decode("latin-1"))
                       for n, v in self._decoder.decode(block, raw=True)]
        except Exception as exc:  # hpack.HPACKError and friends: the connection is unusable
            log.debug("HTTP/2: header block does not decode: %s", exc)
            raise _ConnectionError(COMPRESSION_ERROR) from None
        if before == _table_state(table) and len(self._header_cache) < _HEADER_CACHE:
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
        increment = _U32.unpack(payload)[0] & 0x7FFFFFFF
        if stream_id == 0:
            self._send_window += increment
            if self._send_window > _MAX_WINDOW:
                raise _ConnectionError(FLOW_CONTROL_ERROR)
            for blocked in list(self.streams.values()):
                if blocked.pending or blocked.pending_end is not None:
                    self._flush(blocked)
            return
        stream = self.streams.get(stream_id)
        if stream is not None:
            stream.send_window += increment
            self._flush(stream)

    def _settings(self, payload: bytes) -> None:
        if len(payload) % 6:
            raise _ConnectionError(FRAME_SIZE_ERROR)
        for offset in range(0, len(payload), 6):
            key, value = _SETTING.unpack_from(payload, offset)
            if key == SETTINGS_INITIAL_WINDOW_SIZE:
                if value > _MAX_WINDOW:
                    raise _ConnectionError(FLOW_CONTROL_ERROR)
                delta = value - self._initial_send_window
                self._initial_send_window = value
                for stream in self.streams.values():
                    stream.send_window += delta
            elif key == SETTINGS_MAX_FRAME_SIZE:
                if not _DEFAULT_FRAME <= value <= _MAX_FRAME:
                    raise _ConnectionError(PROTOCOL_ERROR)
                self._max_send_frame = value
        self._write(_SETTINGS_ACK)
        for stream in list(self.streams.values()):
            if stream.pending or stream.pending_end is not None:
                self._flush(stream)

    # -- frames out ----------------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        if self._out is not None:
            self._out.append(data)
        elif not self.closed and self.transport is not None:
            self.transport.write(data)

    def send_headers(self, stream: H2Stream, block: bytes, end_stream: bool = False) -> None:
        """Response headers (or, with end_stream, a trailers-only answer)."""
        if stream.closed:
            return
        stream.headers_sent = True
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
        parts: list[bytes] = []
        if headers is not None:
            stream.headers_sent = True
            parts.append(frame(HEADERS, END_HEADERS, stream.id, headers))
        if stream.pending or stream.pending_end is not None:
            stream.pending += data
        else:
            size = len(data)
            if size <= self._max_send_frame and size <= stream.send_window \
                    and size <= self._send_window:
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

    def send_trailers(self, stream: H2Stream, trailers: bytes) -> None:
        if stream.closed:
            return
        if stream.pending:
            stream.pending_end = trailers
            self._flush(stream)
            return
        self._write(frame(HEADERS, END_HEADERS | END_STREAM, stream.id, trailers))
        self._close_stream(stream)

    def _flush(self, stream: H2Stream) -> None:
        pending = stream.pending
        parts: list[bytes] = []
        while pending:
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
        self._write(frame(RST_STREAM, 0, stream.id, _U32.pack(code)))
        self._close_stream(stream)

    def _close_stream(self, stream: H2Stream) -> None:
        stream.closed = True
        stream.pending.clear()
        self.streams.pop(stream.id, None)

    def go_away(self) -> None:
        """No new streams: the ones already open may finish."""
        if not self.closing and not self.closed:
            self.closing = True
            self._write(frame(GOAWAY, 0, 0, _U32.pack(self._last_stream_id) + _U32.pack(NO_ERROR)))

    def close(self) -> None:
        if self.transport is not None and not self.closed:
            self.transport.close()

    def _fail(self, code: int) -> None:
        log.debug("HTTP/2 connection from %s failed with error %d", self.peer, code)
        if self.transport is not None and not self.closed:
            self.transport.write(
                frame(GOAWAY, 0, 0, _U32.pack(self._last_stream_id) + _U32.pack(code)))
            self.transport.close()
        self.closed = True


class _ConnectionError(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _table_state(table: hpack.table.HeaderTable) -> tuple[int, int, int]:
    """Changes whenever a block inserts into or resizes the dynamic table (an insertion puts a
    new tuple first; only a size update evicts without inserting)."""
    entries = table.dynamic_entries
    return len(entries), id(entries[0]) if entries else 0, table.maxsize


def _unpad(payload: bytes) -> bytes:
    if not payload:
        raise _ConnectionError(PROTOCOL_ERROR)
    pad = payload[0]
    if pad >= len(payload):
        raise _ConnectionError(PROTOCOL_ERROR)
    return payload[1:len(payload) - pad]
