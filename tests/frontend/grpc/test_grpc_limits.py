"""What one gRPC call or connection may ask of the server, as the user sees it.

A message larger than `--grpc-max-message-size` (by default Triton's INT32_MAX; before or after
gzip) fails with RESOURCE_EXHAUSTED and grpc's wording; metadata that is too large or malformed
fails its own call and nothing else; pings are policed as gRPC core does (`--grpc-http2-*`, GOAWAY
ENHANCE_YOUR_CALM "too_many_pings"); the server pings idle clients and drops the ones that do not
answer (`--grpc-keepalive-*`) and retires old connections (`--grpc-max-connection-age*`)."""

from __future__ import annotations

import gzip
import struct
import time

import hpack
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.grpc import service_pb2 as pb
from tritonclient.utils import InferenceServerException

from support.h2_frames import (
    DATA,
    END_HEADERS,
    END_STREAM,
    ENHANCE_YOUR_CALM,
    GOAWAY,
    HEADERS,
    NO_ERROR,
    PING,
    RawClient,
    frame,
    grpc_message,
    request_headers,
    rss_bytes,
)
from support.server_process import ServerProcess
from tritium.frontend.grpc.http2_limits import H2Limits, KeepAliveOptions, PingPolicy
from tritium.frontend.grpc.server import GrpcServer

SERVICE = "/inference.GRPCInferenceService/"
MAX_MESSAGE = 1024 * 1024


@pytest.fixture(scope="module")
def limited(standard_repo):
    with ServerProcess([standard_repo], f"--grpc-max-message-size={MAX_MESSAGE}") as process:
        yield process


@pytest.fixture(scope="module")
def keepalive(standard_repo):
    with ServerProcess([standard_repo], "--grpc-keepalive-time=300",
                       "--grpc-keepalive-timeout=500",
                       "--grpc-keepalive-permit-without-calls=true",
                       "--grpc-http2-max-pings-without-data=0",
                       "--grpc-http2-min-recv-ping-interval-without-data=200",
                       "--grpc-http2-max-ping-strikes=4",
                       "--grpc-max-connection-age=1500",
                       "--grpc-max-connection-age-grace=1000") as process:
        yield process


def _infer(client, data: np.ndarray, **kwargs):
    tensor = grpcclient.InferInput("INPUT0", list(data.shape), "FP32")
    tensor.set_data_from_numpy(data)
    return client.infer("identity_fp32", [tensor], **kwargs)


def _call(attacker: RawClient, stream_id: int, method: str, body: bytes,
          *metadata: tuple[str, str], compressed: bool = False,
          encoder: hpack.Encoder | None = None) -> None:
    """One call; with the connection's `encoder`, headers sent before go as table references
    (from the second call on, the same block each time, as a real client sends it)."""
    headers = request_headers(SERVICE + method, *metadata)
    block = (encoder or hpack.Encoder()).encode(headers)
    attacker.send(frame(HEADERS, END_HEADERS, stream_id, block)
                  + frame(DATA, END_STREAM, stream_id, grpc_message(body, compressed)))


# -- message size --------------------------------------------------------------------------


def test_a_message_over_the_limit_is_resource_exhausted_and_the_client_goes_on(limited) -> None:
    with grpcclient.InferenceServerClient(limited.grpc_url) as client:
        big = np.zeros((1, MAX_MESSAGE // 4 + 1024), dtype=np.float32)
        with pytest.raises(InferenceServerException) as info:
            _infer(client, big)
        assert info.value.status() == "StatusCode.RESOURCE_EXHAUSTED"
        assert info.value.message().startswith("Received message larger than max (")
        assert info.value.message().endswith(f" vs. {MAX_MESSAGE})")
        small = np.ones((1, 8), dtype=np.float32)
        np.testing.assert_array_equal(_infer(client, small).as_numpy("OUTPUT0"), small)


def test_by_default_a_message_past_64_mb_is_served_as_by_triton(server) -> None:
    # Triton 2.51's gRPC takes messages up to INT32_MAX bytes; so does the default here.
    data = np.arange(80 * 1024 * 1024 // 4, dtype=np.float32).reshape(1, -1)  # 80 MiB
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        np.testing.assert_array_equal(_infer(client, data).as_numpy("OUTPUT0"), data)


def test_a_connection_may_hold_one_largest_message_unread() -> None:
    # The unread-request cap of a connection never stops a message the size limit allows.
    raised = GrpcServer({}, H2Limits(max_buffered_input=1000), max_message_size=5000)
    assert raised.limits.max_buffered_input == 5005
    kept = GrpcServer({}, H2Limits(max_buffered_input=10_000), max_message_size=5000)
    assert kept.limits.max_buffered_input == 10_000


def test_a_prefix_claiming_2_gib_is_refused_at_once(limited) -> None:
    attacker = RawClient(limited.grpc_url)
    block = hpack.Encoder().encode(request_headers(SERVICE + "ModelInfer"))
    attacker.send(frame(HEADERS, END_HEADERS, 1, block)
                  + frame(DATA, 0, 1, struct.pack(">BI", 0, 2**31 - 1) + b"\0" * 1000))
    fields = attacker.answer(1)
    assert fields["grpc-status"] == "8"
    assert fields["grpc-message"] == f"Received message larger than max ({2**31 - 1} vs. " \
                                     f"{MAX_MESSAGE})"
    # The connection serves its next call.
    _call(attacker, 3, "ServerLive", pb.ServerLiveRequest().SerializeToString())
    assert attacker.answer(3)["grpc-status"] == "0"
    attacker.close()


def test_a_gzip_bomb_stops_inflating_at_the_limit(limited) -> None:
    bomb = gzip.compress(b"\0" * (256 * 1024 * 1024), compresslevel=9)  # 256 MiB in ~250 KB
    assert len(bomb) < MAX_MESSAGE
    before = rss_bytes(limited.process.pid)
    attacker = RawClient(limited.grpc_url)
    for stream_id in (1, 3, 5):
        _call(attacker, stream_id, "ModelInfer", bomb, ("grpc-encoding", "gzip"),
              compressed=True)
        fields = attacker.answer(stream_id)
        assert fields["grpc-status"] == "8"
        assert "Received message larger than max" in fields["grpc-message"]
    grown = rss_bytes(limited.process.pid) - before
    print(f"\ngzip bomb (256 MiB inflated, x3): RSS +{grown / 2**20:.1f} MiB")
    assert grown < 32 * 1024 * 1024
    _call(attacker, 7, "ServerLive", pb.ServerLiveRequest().SerializeToString())
    assert attacker.answer(7)["grpc-status"] == "0"
    attacker.close()


def test_a_compressed_message_within_the_limit_is_served(limited) -> None:
    data = np.arange(1024, dtype=np.float32).reshape(1, -1)
    with grpcclient.InferenceServerClient(limited.grpc_url) as client:
        result = _infer(client, data, compression_algorithm="gzip")
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)


# -- metadata ------------------------------------------------------------------------------


@pytest.mark.parametrize("header, status, text", [
    (("", "x"), "13", "Illegal header key"),
    (("Upper-Case", "x"), "13", "Illegal header key"),
    (("x-newline\n", "x"), "13", "Illegal header key"),
    (("x-trace-bin", "!!not base64!!"), "13", "Error parsing 'x-trace-bin' metadata"),
    (("x-big", "v" * 70_000), "8", "received metadata size exceeds limit"),
])
def test_bad_metadata_fails_its_call_alone(limited, header, status, text) -> None:
    attacker = RawClient(limited.grpc_url)
    live = pb.ServerLiveRequest().SerializeToString()
    encoder = hpack.Encoder()
    # Sent three times: the later blocks are byte for byte the same, which the server
    # recognises and reads once; headers that failed must fail every time.
    for stream_id in (1, 3, 5):
        _call(attacker, stream_id, "ServerLive", live, header, encoder=encoder)
    _call(attacker, 7, "ServerLive", live)
    for stream_id in (1, 3, 5):
        fields = attacker.answer(stream_id)
        assert fields["grpc-status"] == status
        assert text in fields["grpc-message"]
    assert attacker.answer(7)["grpc-status"] == "0"
    attacker.close()


def test_binary_metadata_in_both_paddings_is_accepted(limited) -> None:
    attacker = RawClient(limited.grpc_url)
    live = pb.ServerLiveRequest().SerializeToString()
    encoder = hpack.Encoder()
    for stream_id in (1, 3, 5):
        _call(attacker, stream_id, "ServerLive", live, ("x-a-bin", "AAEC"), ("x-b-bin", "AAE"),
              ("x-c-bin", "AAE="), encoder=encoder)
    for stream_id in (1, 3, 5):
        assert attacker.answer(stream_id)["grpc-status"] == "0"
    attacker.close()


def test_a_header_block_twice_the_advertised_size_ends_the_connection(limited) -> None:
    attacker = RawClient(limited.grpc_url)
    _call(attacker, 1, "ServerLive", b"", ("x-big", "v" * 140_000))
    goaway = attacker.goaway()
    assert goaway is not None and goaway.error_code == ENHANCE_YOUR_CALM
    attacker.close()
    with grpcclient.InferenceServerClient(limited.grpc_url) as client:
        assert client.is_server_live()


# -- pings, keepalive, connection age --------------------------------------------------------


def test_pings_without_calls_are_too_many_pings(limited) -> None:
    # gRPC core's defaults: no pings without calls; after a first ping, each one sooner than
    # allowed is a strike, 2 strikes are tolerated, the third ends the connection.
    attacker = RawClient(limited.grpc_url)
    for _ in range(4):
        attacker.send(frame(PING, 0, 0, b"abcdefgh"))
    goaway = attacker.goaway()
    assert goaway is not None and goaway.error_code == ENHANCE_YOUR_CALM
    assert goaway.payload[8:] == b"too_many_pings"
    acks = [f for f in attacker.frames if f.kind == PING and f.flags & 1]
    assert len(acks) == 3
    attacker.close()


def test_the_ping_interval_and_strikes_flags_are_applied(keepalive) -> None:
    # Pings without calls allowed, one per 200 ms, 4 strikes tolerated (the defaults would end
    # the connection at the third). A burst of 5 pings is 4 strikes; a ping 300 ms after the
    # server answered them is no strike; the next hurried one is the fifth strike: GOAWAY
    # "too_many_pings". (The connection's age, 1.5 s, is not reached.)
    attacker = RawClient(keepalive.grpc_url)

    def answered(payload: bytes, count: int) -> bool:
        """Wait for `count` ACKs of `payload`, answering the server's keepalive pings."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not attacker.closed:
            for f in attacker.read_available(0.02):
                if f.kind == PING and not f.flags & 1:
                    attacker.send(frame(PING, 1, 0, f.payload))
            if len([f for f in attacker.frames if f.kind == PING and f.payload == payload]) \
                    >= count:
                return True
        return False

    def calmed() -> bool:
        return any(f.kind == GOAWAY and f.error_code == ENHANCE_YOUR_CALM
                   for f in attacker.frames)

    attacker.send(frame(PING, 0, 0, b"burst!!!") * 5)
    assert answered(b"burst!!!", 5) and not calmed()
    time.sleep(0.3)
    attacker.send(frame(PING, 0, 0, b"patient!"))
    assert answered(b"patient!", 1) and not calmed()
    attacker.send(frame(PING, 0, 0, b"hurried!"))
    calm = attacker.wait_for(lambda f: f.kind == GOAWAY and f.error_code == ENHANCE_YOUR_CALM)
    assert calm is not None and calm.payload[8:] == b"too_many_pings"
    attacker.close()


def test_ping_strikes_follow_grpc_core() -> None:
    # The policy alone: pings sooner than the interval are strikes; 0 strikes means any
    # number is tolerated; without calls, and unless permitted, the interval is two hours.
    tolerant = PingPolicy(KeepAliveOptions(http2_max_ping_strikes=0))
    assert not any(tolerant.received(idle=False) for _ in range(1000))
    no_minimum = KeepAliveOptions(http2_min_recv_ping_interval_without_data_ms=0)
    busy = PingPolicy(no_minimum)
    assert not any(busy.received(idle=False) for _ in range(10))
    idle = PingPolicy(no_minimum)
    assert [idle.received(idle=True) for _ in range(4)] == [False, False, False, True]
    forgiving = PingPolicy(KeepAliveOptions())
    for _ in range(10):
        assert [forgiving.received(idle=False) for _ in range(3)] == [False, False, False]
        forgiving.data_sent()  # an answer sent: the strikes start over


def test_the_server_pings_and_drops_a_client_that_does_not_answer(keepalive) -> None:
    attacker = RawClient(keepalive.grpc_url)
    ping = attacker.wait_for(lambda f: f.kind == PING and not f.flags & 1, timeout=10)
    assert ping is not None, "no keepalive ping"
    # Not answered: the connection is closed within the keepalive timeout.
    assert attacker.drain_until_closed(timeout=10)
    attacker.close()


def test_a_client_that_answers_pings_stays_connected(keepalive) -> None:
    attacker = RawClient(keepalive.grpc_url)
    answered = 0
    deadline = time.monotonic() + 1.2  # four keepalive times, within the connection age
    while time.monotonic() < deadline:
        for f in attacker.read_available(0.05):
            if f.kind == PING and not f.flags & 1:
                attacker.send(frame(PING, 1, 0, f.payload))
                answered += 1
    assert answered >= 2
    assert not attacker.closed
    attacker.close()


def test_an_old_connection_is_told_to_go_away_and_then_closed(keepalive) -> None:
    attacker = RawClient(keepalive.grpc_url)
    start = time.monotonic()
    goaway_at = None
    # Its keepalive pings answered: only its age (1.5 s, +-10%), then the grace, close it.
    deadline = time.monotonic() + 10
    while not attacker.closed and time.monotonic() < deadline:
        for f in attacker.read_available(0.05):
            if f.kind == PING and not f.flags & 1:
                attacker.send(frame(PING, 1, 0, f.payload))
            elif f.kind == GOAWAY:
                assert f.error_code == NO_ERROR and f.payload[8:] == b"max_age"
                goaway_at = time.monotonic() - start
    assert goaway_at is not None and goaway_at >= 1.3
    assert attacker.closed
    attacker.close()


def test_tritonclient_is_served_across_keepalives_and_connection_ages(keepalive) -> None:
    data = np.ones((1, 4), dtype=np.float32)
    with grpcclient.InferenceServerClient(keepalive.grpc_url) as client:
        deadline = time.monotonic() + 4  # past two connection ages
        calls = 0
        while time.monotonic() < deadline:
            np.testing.assert_array_equal(_infer(client, data).as_numpy("OUTPUT0"), data)
            calls += 1
            time.sleep(0.05)
    assert calls > 20
