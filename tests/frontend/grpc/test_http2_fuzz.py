"""A property-based fuzz of the HTTP/2 frame parser under the gRPC layer, in process.

Hypothesis draws frame sequences, well-formed and not (requests from an indexing HPACK
encoder, DATA with gRPC messages, resets, settings, pings, window updates, priorities,
CONTINUATION, unknown types, garbage), cuts them into random reads and feeds them to an
`H2Connection` serving echo methods through `GrpcServer`. Whatever arrives:
- nothing raises out of the protocol object (nor out of the callbacks it schedules);
- every stream the client finished is answered (or its answer waits for the client's window),
  unless the connection was closed;
- buffers stay bounded (input, header blocks, streams, answers waiting, request bytes held).

`make test` runs a short form (200 examples); `make test-all` (marked slow) a long one (5,000
sequences of up to 200 frames).
"""

from __future__ import annotations

import asyncio
import struct

import grpc
import hpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.h2_frames import (
    CONTINUATION,
    DATA,
    END_HEADERS,
    END_STREAM,
    GOAWAY,
    HEADERS,
    PING,
    PREFACE,
    PRIORITY,
    RST_STREAM,
    SETTINGS,
    WINDOW_UPDATE,
    FakeTransport,
    frame,
    grpc_message,
    request_headers,
)
from tritium.frontend.grpc.http2_limits import H2Limits
from tritium.frontend.grpc.server import GrpcServer

LIMITS = H2Limits(max_concurrent_streams=8, max_header_list_size=4096,
                  stream_window=65535, connection_window=65535 * 4,
                  max_buffered_input=256 * 1024, max_buffered_output=256 * 1024)
MAX_MESSAGE = 64 * 1024


async def _echo(request: bytes, context) -> bytes:
    return request


async def _echo_stream(requests, context):
    async for request in requests:
        yield request


HANDLERS = {
    "/t.S/Echo": grpc.unary_unary_rpc_method_handler(_echo),
    "/t.S/Stream": grpc.stream_stream_rpc_method_handler(_echo_stream),
}

# None: the next new stream (for HEADERS) or the latest one (for other frames), so that most
# sequences get somewhere; a number: any stream, legal or not.
stream_ids = st.one_of(st.none(), st.none(), st.none(), st.integers(0, 12))
paths = st.sampled_from(["/t.S/Echo", "/t.S/Stream", "/t.S/Missing", ""])
metadata = st.lists(st.tuples(st.sampled_from(["x-a", "x-b-bin", "grpc-encoding", "grpc-timeout",
                                               "", "Bad", "te"]),
                              st.sampled_from(["", "1", "gzip", "AAE", "!!", "1S", "v" * 300])),
                    max_size=3)


@st.composite
def headers_frames(draw) -> tuple[str, object]:
    return ("headers", draw(stream_ids), draw(paths), draw(metadata),
            draw(st.sampled_from([END_HEADERS, END_HEADERS | END_STREAM, 0, END_STREAM])))


@st.composite
def data_frames(draw) -> tuple[str, object]:
    body = draw(st.binary(max_size=64))
    message = grpc_message(body, draw(st.booleans())) if draw(st.booleans()) else body
    return ("frame", DATA, draw(st.sampled_from([0, END_STREAM])), draw(stream_ids), message)


@st.composite
def requests(draw) -> tuple[str, object]:
    """A whole call: HEADERS, then its message(s) and END_STREAM, on a new stream."""
    messages = draw(st.lists(st.binary(max_size=32), min_size=0, max_size=3))
    return ("request", draw(paths), draw(metadata), b"".join(grpc_message(m) for m in messages))


_NO_FLAGS = st.just(0)


def _control(kind: int, payload, flags=_NO_FLAGS, ids=stream_ids):
    return st.builds(lambda p, f, i: ("frame", kind, f, i, p), payload, flags, ids)


# What a client may well send...
valid_frame = st.one_of(
    requests(),
    data_frames(),
    _control(PING, st.binary(min_size=8, max_size=8), st.sampled_from([0, 1]), st.just(0)),
    _control(SETTINGS, st.sampled_from([b"", struct.pack(">HI", 4, 1), struct.pack(">HI", 4, 0),
                                        struct.pack(">HI", 1, 0), struct.pack(">HI", 5, 20000)]),
             st.just(0), st.just(0)),
    _control(WINDOW_UPDATE, st.integers(1, 2**20).map(lambda n: struct.pack(">I", n)),
             ids=st.one_of(st.none(), st.just(0))),
    _control(RST_STREAM, st.just(struct.pack(">I", 8))),
)
# ...and anything else.
odd_frame = st.one_of(
    headers_frames(),
    _control(CONTINUATION, st.binary(max_size=32), st.sampled_from([0, END_HEADERS])),
    _control(RST_STREAM, st.sampled_from([b"", b"\0" * 5])),
    _control(SETTINGS, st.lists(st.tuples(st.integers(0, 8), st.integers(0, 2**32 - 1)),
                                max_size=3).map(
        lambda entries: b"".join(struct.pack(">HI", k, v) for k, v in entries)),
        st.sampled_from([0, 1]), st.just(0)),
    _control(PING, st.binary(min_size=7, max_size=9), st.sampled_from([0, 1]), stream_ids),
    _control(WINDOW_UPDATE, st.integers(0, 2**31).map(lambda n: struct.pack(">I", n)),
             ids=st.integers(0, 6)),
    _control(PRIORITY, st.binary(min_size=5, max_size=5)),
    _control(GOAWAY, st.binary(min_size=8, max_size=12), ids=st.just(0)),
    st.builds(lambda kind, payload, stream_id: ("frame", kind, 0, stream_id, payload),
              st.integers(10, 255), st.binary(max_size=8), stream_ids),  # unknown types
    st.binary(max_size=24).map(lambda b: ("raw", b)),  # garbage
)
any_frame = st.one_of(valid_frame, valid_frame, valid_frame, valid_frame, odd_frame)


class _Fuzzed:
    """One connection of a `GrpcServer`, fed in process."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.errors: list[object] = []
        self.loop.set_exception_handler(lambda loop, context: self.errors.append(context))
        self.server = GrpcServer(HANDLERS, LIMITS, MAX_MESSAGE)
        self.transport = FakeTransport()
        self.encoder = hpack.Encoder()
        self.latest = -1  # no stream yet

        async def start() -> None:
            self.connection = self.server._connection()
            self.connection.connection_made(self.transport)

        self.loop.run_until_complete(start())

    def feed(self, data: bytes) -> None:
        async def run() -> None:
            self.connection.data_received(data)
            for _ in range(20):  # the turns and call bodies this input started
                await asyncio.sleep(0)

        self.loop.run_until_complete(run())

    def encode(self, item: tuple) -> bytes:
        if item[0] == "raw":
            return item[1]
        if item[0] == "frame":
            _, kind, flags, stream_id, payload = item
            if stream_id is None and self.latest < 0:
                return b""  # "the latest stream" before there is one
            return frame(kind, flags, self.latest if stream_id is None else stream_id, payload)
        if item[0] == "request":
            _, path, extra, body = item
            self.latest += 2
            block = self.encoder.encode(request_headers(path, *extra))
            return frame(HEADERS, END_HEADERS, self.latest, block) \
                + frame(DATA, END_STREAM, self.latest, body)
        _, stream_id, path, extra, flags = item
        if stream_id is None:
            self.latest += 2
            stream_id = self.latest
        block = self.encoder.encode(request_headers(path, *extra))
        return frame(HEADERS, flags, stream_id, block)

    def close(self) -> None:
        async def run() -> None:
            self.connection.connection_lost(None)
            for _ in range(5):
                await asyncio.sleep(0)

        self.loop.run_until_complete(run())
        self.loop.close()


def _check(fuzzed: _Fuzzed) -> None:
    connection = fuzzed.connection
    assert fuzzed.errors == []
    assert len(connection._buffer) <= 2**24 + 9
    if connection.header_blocks.continuing is not None:
        assert len(connection.header_blocks.continuing[1]) <= 2 * LIMITS.max_header_list_size
    assert len(connection.header_blocks.cache) <= 64
    assert len(connection.streams) <= 10 * LIMITS.max_concurrent_streams
    assert 0 <= connection.buffered_input <= LIMITS.max_buffered_input + 2 * MAX_MESSAGE
    pending = sum(len(s.pending) for s in connection.streams.values())
    assert pending <= LIMITS.max_buffered_output + 2 * MAX_MESSAGE
    if connection.closed:
        return
    for stream in connection.streams.values():
        # A stream the client finished is answered, or its answer waits for window.
        if stream.remote_ended and stream.handler is not None:
            task = getattr(stream.handler, "task", None)
            assert stream.pending or stream.pending_end is not None or (
                task is not None and not task.done()), f"stream {stream.id} left unanswered"


def _run(frames: list[tuple], cuts: list[int], with_preface: bool) -> None:
    fuzzed = _Fuzzed()
    try:
        data = (PREFACE if with_preface else b"") + b"".join(fuzzed.encode(f) for f in frames)
        start = 0
        for cut in sorted(set(c % (len(data) + 1) for c in cuts)) + [len(data)]:
            if cut > start:
                fuzzed.feed(data[start:cut])
                start = cut
            _check(fuzzed)
    finally:
        fuzzed.close()
    assert fuzzed.errors == []


_frames = st.lists(any_frame, max_size=40)
_cuts = st.lists(st.integers(0, 10_000), max_size=6)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames=_frames, cuts=_cuts, with_preface=st.just(True))
def test_random_frames_never_break_the_connection_object(frames, cuts, with_preface) -> None:
    _run(frames, cuts, with_preface)


@pytest.mark.slow
@pytest.mark.timeout(1800)
@settings(max_examples=5_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames=st.lists(any_frame, max_size=200), cuts=_cuts, with_preface=st.booleans())
def test_random_frames_long_run(frames, cuts, with_preface) -> None:
    _run(frames, cuts, with_preface)
