"""Tritium's own HTTP/2 transport under the gRPC frontend, seen by real gRPC clients.

What grpcio's server used to do for free must still hold: messages larger than a frame and
than the default flow-control windows both ways, compressed requests, deadlines, many calls on
one connection, unknown methods, and a connection that speaks nonsense not hurting the others.
"""

from __future__ import annotations

import asyncio
import socket
import struct

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as aioclient
from tritonclient.utils import InferenceServerException


def _infer(client, data: np.ndarray, model: str = "identity_fp32", **kwargs):
    tensor = grpcclient.InferInput("INPUT0", list(data.shape), "FP32")
    tensor.set_data_from_numpy(data)
    return client.infer(model, [tensor], **kwargs)


def test_a_message_larger_than_frames_and_windows_goes_both_ways(server) -> None:
    # 8 MiB each way: far past the 16 KiB default frame and 64 KiB default window.
    data = np.random.default_rng(0).random((1, 2 * 1024 * 1024), dtype=np.float32)
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        for _ in range(3):
            result = _infer(client, data)
            np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)


@pytest.mark.parametrize("algorithm", ["gzip", "deflate"])
def test_compressed_requests_are_read(server, algorithm: str) -> None:
    data = np.arange(4096, dtype=np.float32).reshape(1, -1)
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        result = _infer(client, data, compression_algorithm=algorithm)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)


def test_a_deadline_ends_the_call_and_the_server_goes_on(server) -> None:
    data = np.ones((1, 4), dtype=np.float32)
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        with pytest.raises(InferenceServerException) as info:
            _infer(client, data, model="identity_slow", client_timeout=0.05)
        assert info.value.status() == "StatusCode.DEADLINE_EXCEEDED"
        np.testing.assert_array_equal(_infer(client, data).as_numpy("OUTPUT0"), data)


def test_many_concurrent_calls_on_one_connection(server) -> None:
    async def run() -> list[np.ndarray]:
        async with aioclient.InferenceServerClient(server.grpc_url) as client:
            async def one(i: int) -> np.ndarray:
                tensor = aioclient.InferInput("INPUT0", [1, 8], "FP32")
                tensor.set_data_from_numpy(np.full((1, 8), i, dtype=np.float32))
                result = await client.infer("identity_fp32", [tensor])
                return result.as_numpy("OUTPUT0")

            return await asyncio.gather(*(one(i) for i in range(200)))

    results = asyncio.run(run())
    for i, output in enumerate(results):
        np.testing.assert_array_equal(output, np.full((1, 8), i, dtype=np.float32))


def test_an_unknown_method_is_unimplemented(server) -> None:
    with grpc.insecure_channel(server.grpc_url) as channel:
        call = channel.unary_unary("/inference.GRPCInferenceService/NoSuchMethod")
        with pytest.raises(grpc.RpcError) as info:
            call(b"", timeout=10)
    assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert not info.value.details()  # grpc core (so Triton) sends no grpc-message for it


_SETTINGS, _GOAWAY, _PROTOCOL_ERROR = 0x4, 0x7, 0x1


def _frames(data: bytes) -> list[tuple[int, bytes]]:
    """(type, payload) of each whole HTTP/2 frame in what the server sent."""
    frames = []
    while len(data) >= 9:
        length = int.from_bytes(data[:3], "big")
        frames.append((data[3], data[9:9 + length]))
        data = data[9 + length:]
    assert data == b"", "the server sent a partial frame"
    return frames


@pytest.mark.parametrize("garbage", [
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",  # not HTTP/2 at all
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x04\x09\x00\x00\x00\x00\x07abcd",  # bad frame
])
def test_a_connection_speaking_nonsense_is_closed_and_others_are_served(server, garbage) -> None:
    host, port = server.grpc_url.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(garbage)
        sock.settimeout(10)
        received = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
    # A connection error, as RFC 9113 wants it: the server's SETTINGS, then a GOAWAY that says
    # PROTOCOL_ERROR, then the connection closed; and everyone else is still served.
    frames = _frames(received)
    assert frames[0][0] == _SETTINGS
    kind, payload = frames[-1]
    assert kind == _GOAWAY
    assert struct.unpack(">I", payload[4:8])[0] == _PROTOCOL_ERROR
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        assert client.is_server_live()
