"""A client that pings while a large message moves is not "too_many_pings", as with gRPC core.

gRPC core's server counts a client's ping as a strike only when it sent no headers, DATA or
WINDOW_UPDATE since the previous ping (chttp2 resets its ping clock on each). grpcio clients
ping during a long transfer (BDP probes, keepalive), so a server that counted strikes across
DATA paced by the client's window, or across the WINDOW_UPDATEs it sends while reading a large
request, dropped the connection with GOAWAY ENHANCE_YOUR_CALM "too_many_pings" in the middle of
a response or request of a few hundred MB. Here a raw HTTP/2 client paces both directions by
hand and pings between the steps, with the default ping policy (2 strikes tolerated): more
rounds than the strikes allowed, and the connection must stay up.
"""

from __future__ import annotations

import struct

import hpack
import numpy as np
from tritonclient.grpc import service_pb2 as pb

from support.h2_frames import (
    DATA,
    END_HEADERS,
    END_STREAM,
    GOAWAY,
    HEADERS,
    PING,
    SETTINGS,
    SETTINGS_INITIAL_WINDOW_SIZE,
    WINDOW_UPDATE,
    RawClient,
    frame,
    grpc_message,
    request_headers,
)

MODEL_INFER = "/inference.GRPCInferenceService/ModelInfer"
ROUNDS = 6  # pings: more than the 2 strikes the default policy tolerates, plus the first


def _infer_message(elements: int) -> bytes:
    request = pb.ModelInferRequest(model_name="identity_fp32")
    tensor = request.inputs.add(name="INPUT0", datatype="FP32")
    tensor.shape[:] = [1, elements]
    request.raw_input_contents.append(np.ones(elements, np.float32).tobytes())
    return request.SerializeToString()


def _ping(client: RawClient, payload: bytes) -> None:
    """A ping, answered (an ACK), with the connection still up."""
    client.send(frame(PING, 0, 0, payload))
    ack = client.wait_for(lambda f: f.kind in (PING, GOAWAY) and
                          (f.kind == GOAWAY or (f.flags & 1 and f.payload == payload)))
    assert ack is not None and ack.kind == PING, \
        f"ping {payload!r}: {'GOAWAY ' + repr(ack.payload[8:]) if ack else 'no answer'}"


def _count(client: RawClient, kind: int, stream_id: int) -> int:
    return sum(1 for f in client.frames if f.kind == kind and f.stream_id == stream_id)


def test_pings_between_data_the_client_window_paces(server) -> None:
    """The answer is larger than the client's stream window: each WINDOW_UPDATE lets one more
    DATA frame out (written when the window opens, not when the answer was sent), and a ping
    comes before each."""
    window = 1024
    client = RawClient(server.grpc_url, struct.pack(">HI", SETTINGS_INITIAL_WINDOW_SIZE, window))
    block = hpack.Encoder().encode(request_headers(MODEL_INFER))
    client.send(frame(HEADERS, END_HEADERS, 1, block)
                + frame(DATA, END_STREAM, 1, grpc_message(_infer_message(4096))))  # 16 KiB
    assert client.wait_for(lambda f: f.kind == DATA and f.stream_id == 1) is not None
    for round_ in range(ROUNDS):
        _ping(client, b"down%04d" % round_)
        seen = _count(client, DATA, 1)
        client.send(frame(WINDOW_UPDATE, 0, 1, struct.pack(">I", window)))
        assert client.wait_for(lambda f, seen=seen: _count(client, DATA, 1) > seen) is not None
    # The rest of the answer, then its trailers: the call completes on the same connection.
    client.send(frame(WINDOW_UPDATE, 0, 1, struct.pack(">I", 1 << 20)))
    trailers = client.wait_for(lambda f: f.kind == GOAWAY or (
        f.kind == HEADERS and f.stream_id == 1 and bool(f.flags & END_STREAM)))
    assert trailers is not None and trailers.kind == HEADERS
    client.close()


def test_pings_between_window_updates_for_a_large_request(server) -> None:
    """A request sent in steps of half the server's stream window: the server gives each step
    back with a WINDOW_UPDATE, and a ping comes before each step."""
    client = RawClient(server.grpc_url)
    settings = client.wait_for(lambda f: f.kind == SETTINGS and not f.flags & 1)
    assert settings is not None
    window = dict(struct.iter_unpack(">HI", settings.payload))[SETTINGS_INITIAL_WINDOW_SIZE]
    step = window // 2
    block = hpack.Encoder().encode(request_headers(MODEL_INFER))
    # A message announced larger than what is sent: the server reads and gives back each step.
    client.send(frame(HEADERS, END_HEADERS, 1, block)
                + frame(DATA, 0, 1, struct.pack(">BI", 0, (ROUNDS + 1) * step)))
    chunk = b"\0" * 16384
    for round_ in range(ROUNDS):
        _ping(client, b"up%06d" % round_)
        seen = _count(client, WINDOW_UPDATE, 1)
        client.send(b"".join(frame(DATA, 0, 1, chunk) for _ in range(step // len(chunk))))
        assert client.wait_for(
            lambda f, seen=seen: _count(client, WINDOW_UPDATE, 1) > seen) is not None
    _ping(client, b"up-done!")
    client.close()
