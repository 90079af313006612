"""The known HTTP/2 denial-of-service attacks, run against a live server on loopback.

Each test runs one attack over a raw socket (frames built by hand) while a well-behaved
tritonclient keeps calling ModelInfer beside it, and asserts what a user sees: the attacker
is stopped (GOAWAY ENHANCE_YOUR_CALM, refused streams, or simply no longer read), the good
client got every answer, and the server's resident memory stayed bounded. The figures (memory
growth, the good client's slowest call) are printed; run with `-s` to see them.

Rapid Reset (CVE-2023-44487), the CONTINUATION flood (CVE-2024-27316 class) and the 2019
family (CVE-2019-9511 data dribble, 9512 ping flood, 9513 resource loop, 9514 reset flood,
9515 settings flood, 9516 0-length headers leak, 9517 internal data buffering, 9518 empty
frames flood).
"""

from __future__ import annotations

import struct
import time

import hpack
import numpy as np
import pytest

from support.attack_measure import Measured
from support.h2_frames import (
    ACK,
    CANCEL,
    CONTINUATION,
    DATA,
    END_HEADERS,
    END_STREAM,
    ENHANCE_YOUR_CALM,
    GOAWAY,
    HEADERS,
    PING,
    PRIORITY,
    REFUSED_STREAM,
    RST_STREAM,
    SETTINGS,
    SETTINGS_INITIAL_WINDOW_SIZE,
    SETTINGS_MAX_CONCURRENT_STREAMS,
    SETTINGS_MAX_HEADER_LIST_SIZE,
    WINDOW_UPDATE,
    RawClient,
    frame,
    grpc_message,
    request_headers,
)
from support.server_process import ServerProcess

INFER = "/inference.GRPCInferenceService/ModelInfer"
MiB = 1024 * 1024


@pytest.fixture(scope="module")
def server(standard_repo):
    """A server of its own: its memory is what these tests measure."""
    with ServerProcess([standard_repo]) as process:
        yield process


_ENCODED_INFER = hpack.Encoder().encode(request_headers(INFER), huffman=False)


def _headers(stream_id: int, end_stream: bool = False, block: bytes = _ENCODED_INFER) -> bytes:
    return frame(HEADERS, END_HEADERS | (END_STREAM if end_stream else 0), stream_id, block)


def _assert_calm(attacker: RawClient, debug: bytes | None = None) -> None:
    goaway = attacker.goaway()
    assert goaway is not None, "the server never said GOAWAY"
    assert goaway.error_code == ENHANCE_YOUR_CALM
    if debug is not None:
        assert goaway.payload[8:] == debug
    assert attacker.drain_until_closed(), "the server kept the connection open"


def _flood(attacker: RawClient, chunk: bytes, total: int, measured: Measured) -> None:
    """Send `chunk` until `total` bytes went out or the server closed the connection."""
    sent = 0
    while sent < total and attacker.send(chunk):
        sent += len(chunk)
        attacker.read_available()
        if attacker.closed:
            break
        if sent % (len(chunk) * 64) < len(chunk):
            measured.sample()


def test_the_server_advertises_its_limits(server) -> None:
    # What a client learns before its first call: at most 100 streams at once, header lists
    # of 64 KiB, 4 MiB stream windows and a 16 MiB connection window.
    client = RawClient(server.grpc_url)
    settings = client.wait_for(lambda f: f.kind == SETTINGS and not f.flags & ACK)
    update = client.wait_for(lambda f: f.kind == WINDOW_UPDATE and f.stream_id == 0)
    client.close()
    assert settings is not None and update is not None
    entries = dict(struct.iter_unpack(">HI", settings.payload))
    assert entries[SETTINGS_MAX_CONCURRENT_STREAMS] == 100
    assert entries[SETTINGS_MAX_HEADER_LIST_SIZE] == 64 * 1024
    assert entries[SETTINGS_INITIAL_WINDOW_SIZE] == 4 * MiB
    assert 65535 + struct.unpack(">I", update.payload)[0] == 16 * MiB


def test_rapid_reset(server) -> None:
    # HEADERS, a request message and RST_STREAM, 100 streams a write, until the server says
    # GOAWAY: the reset budget (1,000, then 33 a second) runs out within the first batches.
    with Measured(server, "Rapid Reset", 32 * MiB) as measured:
        attacker = RawClient(server.grpc_url)
        stream = 1
        for _ in range(200):
            chunk = b"".join(
                _headers(stream + 2 * i) + frame(DATA, END_STREAM, stream + 2 * i,
                                                 grpc_message(b"x"))
                + frame(RST_STREAM, 0, stream + 2 * i, struct.pack(">I", 8)) for i in range(100))
            stream += 200
            if not attacker.send(chunk):
                break
            attacker.read_available()
            measured.sample()
            if attacker.closed or attacker.goaway(0) is not None:
                break
        _assert_calm(attacker)
        assert stream < 200 * 200, "the attack ran to its end"
        attacker.close()


def test_continuation_flood(server) -> None:
    with Measured(server, "CONTINUATION flood", 32 * MiB) as measured:
        attacker = RawClient(server.grpc_url)
        attacker.send(frame(HEADERS, 0, 1, _ENCODED_INFER[:10]))
        # Endless CONTINUATION frames, none with END_HEADERS: 300 MB offered.
        _flood(attacker, frame(CONTINUATION, 0, 1, b"\x00" * 16384), 300 * MiB, measured)
        _assert_calm(attacker)
        attacker.close()


def test_many_tiny_continuation_frames(server) -> None:
    with Measured(server, "empty CONTINUATION frames", 16 * MiB) as measured:
        attacker = RawClient(server.grpc_url)
        attacker.send(frame(HEADERS, 0, 1, _ENCODED_INFER[:10]))
        _flood(attacker, frame(CONTINUATION, 0, 1, b"") * 1000, 10 * MiB, measured)
        _assert_calm(attacker)
        attacker.close()


def test_ping_flood_is_too_many_pings(server) -> None:
    with Measured(server, "PING flood", 16 * MiB) as measured:
        attacker = RawClient(server.grpc_url)
        _flood(attacker, frame(PING, 0, 0, b"12345678") * 1000, 50 * MiB, measured)
        _assert_calm(attacker, b"too_many_pings")
        attacker.close()


def test_ping_flood_while_data_flows_is_still_capped(server) -> None:
    # Each answer the server sends forgives the ping strikes (as in gRPC core); the ping rate
    # limit still holds.
    with Measured(server, "PING flood between calls", 16 * MiB):
        attacker = RawClient(server.grpc_url)
        for index in range(2000):
            stream_id = 2 * index + 1
            request = _headers(stream_id) + frame(DATA, END_STREAM, stream_id, grpc_message(b""))
            if not attacker.send(request + frame(PING, 0, 0, b"12345678") * 5):
                break
            attacker.read_available(0.01)
            if attacker.closed:
                break
        _assert_calm(attacker)
        attacker.close()


def test_settings_flood(server) -> None:
    with Measured(server, "SETTINGS flood", 16 * MiB) as measured:
        attacker = RawClient(server.grpc_url)
        entry = struct.pack(">HI", SETTINGS_INITIAL_WINDOW_SIZE, 65535)
        _flood(attacker, frame(SETTINGS, 0, 0, entry) * 1000, 50 * MiB, measured)
        _assert_calm(attacker)
        attacker.close()


def test_priority_resource_loop(server) -> None:
    with Measured(server, "PRIORITY flood", 16 * MiB) as measured:
        attacker = RawClient(server.grpc_url)
        chunk = b"".join(frame(PRIORITY, 0, 2 * i + 1, struct.pack(">IB", 2 * i + 3, 200))
                         for i in range(1000))
        _flood(attacker, chunk, 50 * MiB, measured)
        _assert_calm(attacker)
        attacker.close()


def test_empty_data_frames_flood(server) -> None:
    with Measured(server, "empty DATA flood", 16 * MiB) as measured:
        attacker = RawClient(server.grpc_url)
        attacker.send(_headers(1))
        _flood(attacker, frame(DATA, 0, 1, b"") * 1000, 50 * MiB, measured)
        _assert_calm(attacker)
        attacker.close()


def test_reset_flood_of_streams_the_server_must_reset(server) -> None:
    # Streams opened beyond the limit (the server answers each with RST_STREAM
    # REFUSED_STREAM), by a client that reads nothing: the server stops reading it once its
    # answers pile up, instead of queueing resets without bound.
    with Measured(server, "reset flood (refused streams, never read)", 32 * MiB) as measured:
        attacker = RawClient(server.grpc_url)
        attacker.send_timeout = 2.0
        stream = 1
        for _ in range(2000):
            if not attacker.send(b"".join(_headers(stream + 2 * i) for i in range(500))):
                break  # the server stopped reading (send timed out) or closed the connection
            stream += 1000
            measured.sample()
        refused = [f for f in attacker.read_available(1.0) if f.kind == RST_STREAM]
        assert refused and all(f.error_code in (REFUSED_STREAM, 0) for f in refused[:10])
        attacker.close()


def test_zero_length_headers_leak(server) -> None:
    # Header lists of thousands of empty fields: each counts 32 bytes (RFC 9113), so the
    # list is capped; the call fails alone or the connection is told to calm down.
    with Measured(server, "0-length headers", 16 * MiB) as measured:
        attacker = RawClient(server.grpc_url)
        empty = b"\x00\x00\x00"  # literal without indexing, empty name, empty value
        for index in range(200):
            stream_id = 2 * index + 1
            block = _ENCODED_INFER + empty * 1500
            if not attacker.send(_headers(stream_id, block=block)):
                break
            measured.sample()
        answers = attacker.wait_for(lambda f: f.kind in (HEADERS, GOAWAY), 10)
        assert answers is not None
        if answers.kind == HEADERS:  # the call failed alone, with a status
            decoded = dict(hpack.Decoder().decode(answers.payload))
            assert decoded["grpc-status"] in ("8", "13")
        attacker.close()


def test_data_dribble_against_a_one_byte_window(server) -> None:
    # The client allows one byte of answer per WINDOW_UPDATE on as many streams as it can
    # open: streams beyond the limit are refused, the answers held are bounded.
    with Measured(server, "data dribble (1-byte windows)", 64 * MiB) as measured:
        attacker = RawClient(server.grpc_url, struct.pack(">HI", SETTINGS_INITIAL_WINDOW_SIZE, 1))
        attacker.read_available(0.5)
        attacker.send(frame(SETTINGS, 1, 0))
        data = np.zeros((1, 4 * 1024), dtype=np.float32)  # 16 KiB answers
        body = _infer_body("identity_fp32", data)  # 300 of them fit the server's window
        requests = b"".join(_headers(2 * i + 1) + frame(DATA, END_STREAM, 2 * i + 1, body)
                            for i in range(300))
        attacker.send(requests)
        for _ in range(50):
            attacker.send(b"".join(frame(WINDOW_UPDATE, 0, 2 * i + 1, struct.pack(">I", 1))
                                   for i in range(100)))
            attacker.read_available(0.02)
            measured.sample()
        def refused() -> list[int]:
            return [f.stream_id for f in attacker.frames
                    if f.kind == RST_STREAM and f.error_code == REFUSED_STREAM]

        deadline = time.monotonic() + 10
        while len(refused()) < 200 and time.monotonic() < deadline:
            attacker.read_available(0.1)
        # Never more open than the advertised limit (100): every stream after it is refused.
        assert refused() == [2 * i + 1 for i in range(100, 300)]
        attacker.close()


@pytest.mark.parametrize("windows", ["closed", "open"])
def test_internal_data_buffering_against_a_client_that_never_reads(server, windows) -> None:
    # 1 MiB answers to a client that reads nothing. With its windows left at 64 KiB the
    # answers wait in the server until they pass the output bound and their streams are
    # cancelled; with its windows opened wide they fill the socket, and the server stops
    # reading the client (its sends time out) instead of taking more requests.
    settings = b""
    if windows == "open":
        settings = struct.pack(">HI", SETTINGS_INITIAL_WINDOW_SIZE, 2**31 - 1)
    with Measured(server, f"client never reads, windows {windows}", 128 * MiB) as measured:
        attacker = RawClient(server.grpc_url, settings)
        if windows == "open":
            attacker.send(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 2**31 - 1 - 65535)))
        attacker.send_timeout = 3.0
        body = _infer_body("identity_fp32", np.zeros((1, 256 * 1024), dtype=np.float32))
        stream_id, stalled = 1, False
        for _ in range(150):
            if not attacker.send(_headers(stream_id) + b"".join(
                    frame(DATA, 0, stream_id, body[i:i + 16384])
                    for i in range(0, len(body), 16384)) + frame(DATA, END_STREAM, stream_id)):
                stalled = True  # the server stopped reading
                break
            stream_id += 2
            measured.sample()
        measured.sample()
        if windows == "open":
            assert stalled, "the server read everything a non-reading client sent"
        else:
            cancelled = attacker.wait_for(
                lambda f: f.kind == RST_STREAM and f.error_code == CANCEL, timeout=20)
            assert cancelled is not None, "no answer was ever given up"
        attacker.close()


def _infer_body(model: str, data: np.ndarray) -> bytes:
    from tritonclient.grpc import service_pb2 as pb

    request = pb.ModelInferRequest(model_name=model)
    tensor = request.inputs.add(name="INPUT0", datatype="FP32", shape=list(data.shape))
    del tensor
    request.raw_input_contents.append(data.tobytes())
    return grpc_message(request.SerializeToString())
