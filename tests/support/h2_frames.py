"""Raw HTTP/2 for the transport tests: frames built and parsed by hand, an in-process harness
around `H2Connection`, a raw client socket for attacks on a live server, and the server's RSS.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

import hpack

from tritium.frontend.grpc import http2
from tritium.frontend.grpc.http2_limits import H2Limits

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, \
    CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4
NO_ERROR, PROTOCOL_ERROR, REFUSED_STREAM, CANCEL, ENHANCE_YOUR_CALM = 0x0, 0x1, 0x7, 0x8, 0xB
SETTINGS_HEADER_TABLE_SIZE, SETTINGS_MAX_CONCURRENT_STREAMS = 0x1, 0x3
SETTINGS_INITIAL_WINDOW_SIZE, SETTINGS_MAX_HEADER_LIST_SIZE = 0x4, 0x6


def frame(kind: int, flags: int, stream_id: int, payload: bytes = b"") -> bytes:
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream_id.to_bytes(4, "big") \
        + payload


def grpc_message(body: bytes, compressed: bool = False) -> bytes:
    return struct.pack(">BI", int(compressed), len(body)) + body


def request_headers(path: str, *extra: tuple[str, str]) -> list[tuple[str, str]]:
    return [(":method", "POST"), (":scheme", "http"), (":path", path),
            (":authority", "localhost"), ("content-type", "application/grpc"), ("te", "trailers"),
            *extra]


@dataclass
class Frame:
    kind: int
    flags: int
    stream_id: int
    payload: bytes

    @property
    def error_code(self) -> int:
        """RST_STREAM's or GOAWAY's error code."""
        return struct.unpack(">I", self.payload[-4:] if self.kind == RST_STREAM
                             else self.payload[4:8])[0]


def parse_frames(data: bytes) -> tuple[list[Frame], bytes]:
    """The whole frames in `data`, and what is left over."""
    frames = []
    while len(data) >= 9:
        length = int.from_bytes(data[:3], "big")
        if len(data) < 9 + length:
            break
        frames.append(Frame(data[3], data[4], int.from_bytes(data[5:9], "big") & 0x7FFFFFFF,
                            data[9:9 + length]))
        data = data[9 + length:]
    return frames, data


# -- in process ------------------------------------------------------------------------------


class FakeTransport(asyncio.Transport):
    """Collects what the connection writes; never pushes back."""

    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.closed = False
        self.reading = True

    def write(self, data: bytes) -> None:  # type: ignore[override]
        self.written += data

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def get_write_buffer_size(self) -> int:
        return 0

    def can_write_eof(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: object = None) -> object:
        return ("127.0.0.1", 1) if name == "peername" else default


class RecordingHandler:
    """A stream handler that remembers what it got and answers at the end."""

    def __init__(self, connection: http2.H2Connection, stream: http2.H2Stream,
                 headers: list[tuple[str, str]]) -> None:
        self.connection, self.stream, self.headers = connection, stream, headers
        self.data = bytearray()
        self.ended = self.reset = False

    def on_data(self, data: bytes) -> None:
        self.data += data
        self.connection.release(self.stream, len(data))

    def on_end(self) -> None:
        self.ended = True
        self.connection.send_data(self.stream, b"answer", trailers=http2.encode_headers(
            [("grpc-status", "0")]), headers=http2.encode_headers([(":status", "200")]))

    def on_reset(self) -> None:
        self.reset = True


@dataclass
class Harness:
    """One `H2Connection` over a fake transport; `feed` bytes in, read `frames()` out."""

    limits: H2Limits = field(default_factory=H2Limits)
    handlers: list[RecordingHandler] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.transport = FakeTransport()
        self.closed_by_server = False
        self.loop = asyncio.new_event_loop()
        self.connection = http2.H2Connection(self._start, self._closed, self.limits)
        self._in_loop(self.connection.connection_made, self.transport)
        self._seen = 0

    def _in_loop(self, function, *args) -> None:
        """Run `function` as the server runs it: inside its event loop (timers need one)."""
        async def run() -> None:
            function(*args)
            while self.connection._turn_pending:  # the rest of what was fed, turn by turn
                await asyncio.sleep(0)

        self.loop.run_until_complete(run())

    def _start(self, connection: http2.H2Connection, stream: http2.H2Stream,
               headers: list[tuple[str, str]]) -> RecordingHandler:
        handler = RecordingHandler(connection, stream, headers)
        self.handlers.append(handler)
        return handler

    def _closed(self, connection: http2.H2Connection) -> None:
        self.closed_by_server = True

    def feed(self, data: bytes) -> None:
        self._in_loop(self.connection.data_received, data)

    def frames(self) -> list[Frame]:
        """Frames written since the last call."""
        frames, rest = parse_frames(bytes(self.transport.written[self._seen:]))
        assert rest == b""
        self._seen = len(self.transport.written)
        return frames

    def lose(self) -> None:
        self._in_loop(self.connection.connection_lost, None)
        self.loop.close()


# -- against a live server -------------------------------------------------------------------


class RawClient:
    """A TCP connection speaking raw HTTP/2 frames to the server, as an attacker would."""

    def __init__(self, address: str, settings: bytes = b"") -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.send_timeout = 10.0
        self.sock.sendall(PREFACE + frame(SETTINGS, 0, 0, settings))
        self.buffer = b""
        self.frames: list[Frame] = []
        self.closed = False

    def send(self, data: bytes) -> bool:
        """False once the server has closed the connection (or stopped reading it for
        `send_timeout` seconds)."""
        try:
            self.sock.settimeout(self.send_timeout)
            self.sock.sendall(data)
            return True
        except OSError:
            self.closed = True
            return False

    def read_available(self, timeout: float = 0.0) -> list[Frame]:
        """Frames the server sent (waiting up to `timeout` for the first bytes)."""
        self.sock.settimeout(timeout if timeout > 0 else 0.0001)
        new: list[Frame] = []
        while True:
            try:
                chunk = self.sock.recv(1 << 20)
            except (BlockingIOError, TimeoutError):
                break
            except OSError:
                self.closed = True
                break
            if not chunk:
                self.closed = True
                break
            self.buffer += chunk
            frames, self.buffer = parse_frames(self.buffer)
            new += frames
            self.sock.settimeout(0.0001)
        self.frames += new
        return new

    def wait_for(self, predicate, timeout: float = 10.0) -> Frame | None:
        """The first frame (already read or arriving within `timeout`) that matches."""
        deadline = time.monotonic() + timeout
        for f in self.frames:
            if predicate(f):
                return f
        while time.monotonic() < deadline and not self.closed:
            for f in self.read_available(0.2):
                if predicate(f):
                    return f
        return next((f for f in self.frames if predicate(f)), None)

    def answer(self, stream_id: int, timeout: float = 10.0) -> dict[str, str]:
        """The status fields the server answered `stream_id` with (trailers, or trailers-only)."""
        decoder = hpack.Decoder()
        deadline = time.monotonic() + timeout
        fields: dict[str, str] = {}
        seen = 0
        while time.monotonic() < deadline:
            for f in self.frames[seen:]:
                if f.kind == HEADERS:  # every block goes through the decoder, in order
                    decoded = dict(decoder.decode(f.payload))
                    if f.stream_id == stream_id:
                        fields.update(decoded)
                        if f.flags & END_STREAM:
                            return fields
                assert f.kind != GOAWAY, "the server closed the whole connection"
            seen = len(self.frames)
            self.read_available(0.1)
        raise AssertionError(f"stream {stream_id} was never answered")

    def goaway(self, timeout: float = 10.0) -> Frame | None:
        return self.wait_for(lambda f: f.kind == GOAWAY, timeout)

    def drain_until_closed(self, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while not self.closed and time.monotonic() < deadline:
            self.read_available(0.2)
        return self.closed

    def close(self) -> None:
        self.sock.close()


def rss_bytes(pid: int) -> int:
    """Resident memory of a process, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")
