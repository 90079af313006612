"""The HTTP/2 wire format (RFC 9113 sections 4 and 6): frame types, flags, error codes and
settings, building frames and header blocks, the server's opening SETTINGS, and the error that
ends a connection. `http2` is the connection that speaks it.
"""

from __future__ import annotations

import struct

import hpack

from .http2_limits import H2Limits

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
ENHANCE_YOUR_CALM = 0xB

# Settings.
SETTINGS_MAX_CONCURRENT_STREAMS = 0x3
SETTINGS_INITIAL_WINDOW_SIZE = 0x4
SETTINGS_MAX_FRAME_SIZE = 0x5
SETTINGS_MAX_HEADER_LIST_SIZE = 0x6
# Entries one SETTINGS frame may carry (nghttp2's limit).
MAX_SETTINGS_ENTRIES = 32

MAX_WINDOW = 2**31 - 1
DEFAULT_WINDOW = 65535
DEFAULT_FRAME = 16384
# The largest frame this side accepts (advertised): big tensors arrive in few frames.
MAX_FRAME = 2**24 - 1

FRAME_HEAD = struct.Struct(">HBBBI")  # length as 16+8 bits, type, flags, stream id
U32 = struct.Struct(">I")
SETTING = struct.Struct(">HI")


_HEAD_OUT = struct.Struct(">BHBBI")  # length as 8+16 bits, type, flags, stream id


def frame(kind: int, flags: int, stream_id: int, payload: bytes = b"") -> bytes:
    return frame_head(kind, flags, stream_id, len(payload)) + payload


def frame_head(kind: int, flags: int, stream_id: int, size: int) -> bytes:
    """A frame's 9-byte head, for a payload of `size` bytes written after it."""
    return _HEAD_OUT.pack(size >> 16, size & 0xFFFF, kind, flags, stream_id)


def encode_headers(headers: list[tuple[str, str]]) -> bytes:
    """A header block of never-indexed literals: it leaves the peer's table alone, so it can be
    built once and sent on any connection."""
    fields = [hpack.NeverIndexedHeaderTuple(name, value) for name, value in headers]
    return hpack.Encoder().encode(fields, huffman=False)


def server_preface(limits: H2Limits) -> bytes:
    """The server's SETTINGS (its limits) and the WINDOW_UPDATE that opens its connection
    window."""
    settings = frame(
        SETTINGS, 0, 0,
        SETTING.pack(SETTINGS_MAX_CONCURRENT_STREAMS, limits.max_concurrent_streams)
        + SETTING.pack(SETTINGS_INITIAL_WINDOW_SIZE, limits.stream_window)
        + SETTING.pack(SETTINGS_MAX_FRAME_SIZE, MAX_FRAME)
        + SETTING.pack(SETTINGS_MAX_HEADER_LIST_SIZE, limits.max_header_list_size),
    )
    increment = limits.connection_window - DEFAULT_WINDOW
    return settings + (frame(WINDOW_UPDATE, 0, 0, U32.pack(increment)) if increment > 0 else b"")


SETTINGS_ACK = frame(SETTINGS, ACK, 0)


class H2ConnectionError(Exception):
    """A fault that ends the connection: the GOAWAY's error code, and its debug data."""

    def __init__(self, code: int, debug: bytes = b"") -> None:
        super().__init__(code)
        self.code = code
        self.debug = debug


def unpad(payload: bytes) -> bytes:
    """A PADDED frame's payload without its padding (a PROTOCOL_ERROR if it is wrong)."""
    if not payload or payload[0] >= len(payload):
        raise H2ConnectionError(PROTOCOL_ERROR)
    pad = payload[0]
    return payload[1:len(payload) - pad]
