"""How answers leave an HTTP/2 connection (http2_output): a burst of answers sent in one turn of
the event loop goes out in writes that double, the first at once, so that a client starts on
the first answers while the rest are being encoded; a lone stream's answer is written at once.
"""

from __future__ import annotations

import asyncio

import pytest

from support.h2_frames import (
    DATA,
    END_HEADERS,
    END_STREAM,
    HEADERS,
    PREFACE,
    SETTINGS,
    FakeTransport,
    Harness,
    RecordingHandler,
    frame,
    parse_frames,
)
from tritium.frontend.grpc import http2


class _Writes(FakeTransport):
    """Keeps each write apart."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:  # type: ignore[override]
        super().write(data)
        self.writes.append(bytes(data))


class _Later(RecordingHandler):
    """Answers when told, not at the end of the request."""

    def on_end(self) -> None:
        self.ended = True

    def answer(self) -> None:
        self.connection.send_data(
            self.stream, b"answer %d" % self.stream.id,
            trailers=http2.encode_headers([("grpc-status", "0")]),
            headers=http2.encode_headers([(":status", "200")]))


class _Burst(Harness):
    def __post_init__(self) -> None:
        super().__post_init__()
        self.transport = _Writes()
        self.connection.transport = self.transport

    def _start(self, connection, stream, headers) -> _Later:
        handler = _Later(connection, stream, headers)
        self.handlers.append(handler)
        return handler

    def open(self, streams: int) -> list[_Later]:
        block = http2.encode_headers([(":method", "POST"), (":path", "/a/B"),
                                      (":scheme", "http"), (":authority", "x")])
        self.feed(PREFACE + frame(SETTINGS, 0, 0) + b"".join(
            frame(HEADERS, END_HEADERS | END_STREAM, 2 * n + 1, block) for n in range(streams)))
        assert len(self.handlers) == streams and all(h.ended for h in self.handlers)
        self.transport.writes.clear()
        return self.handlers

    def answer_in_one_turn(self, handlers: list[_Later]) -> list[list[int]]:
        """Answer `handlers` from callbacks of one loop turn, as the loop bridge delivers a
        batch's answers; the streams answered by each write that followed."""
        async def turn() -> None:
            for handler in handlers:
                self.loop.call_soon(handler.answer)
            await asyncio.sleep(0)  # the answers' turn
            await asyncio.sleep(0)  # the burst's end
        self.loop.run_until_complete(turn())
        answered = []
        for data in self.transport.writes:
            frames, rest = parse_frames(data)
            assert rest == b"", "a write split a frame"
            answered.append([f.stream_id for f in frames if f.kind == DATA])
        return answered


@pytest.mark.parametrize(("streams", "sizes"), [
    (32, [1, 1, 2, 4, 8, 16]),
    (8, [1, 1, 2, 4]),
    (5, [1, 1, 2, 1]),
    (2, [1, 1]),
])
def test_a_burst_of_answers_leaves_in_doubling_writes(streams: int, sizes: list[int]) -> None:
    harness = _Burst()
    handlers = harness.open(streams)
    answered = harness.answer_in_one_turn(handlers)
    assert [len(w) for w in answered] == sizes
    # Every answer once, in the order sent, each whole (HEADERS, DATA, trailers) in one write.
    assert [s for w in answered for s in w] == [h.stream.id for h in handlers]
    for data in harness.transport.writes:
        frames, _ = parse_frames(data)
        kinds = [(f.stream_id, f.kind) for f in frames]
        assert kinds == [(s, k) for s in sorted({f.stream_id for f in frames})
                         for k in (HEADERS, DATA, HEADERS)]
    assert harness.connection.streams == {}
    harness.lose()


def test_the_next_turn_starts_a_new_burst() -> None:
    harness = _Burst()
    handlers = harness.open(12)
    assert [len(w) for w in harness.answer_in_one_turn(handlers[:6])] == [1, 1, 2, 2]
    harness.transport.writes.clear()
    assert [len(w) for w in harness.answer_in_one_turn(handlers[6:])] == [1, 1, 2, 2]
    harness.lose()


def test_a_lone_streams_answer_is_written_at_once() -> None:
    harness = _Burst()
    (handler,) = harness.open(1)
    handler.answer()  # outside any turn's callbacks: nothing would come to flush it later
    assert [len(parse_frames(w)[0]) for w in harness.transport.writes] == [3]
    harness.lose()
