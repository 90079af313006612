"""Soak and fuzz runs (marked slow: `make test-all` runs them, `make test` skips them).

- The gRPC port (Tritium's own HTTP/2 layer) and the HTTP port take thousands of random or
  malformed connections; the server answers or closes each, never dies, and keeps serving.
- Mixed HTTP and gRPC clients run a Python model for a while; every answer is right and the
  server's memory stops growing once warm.

Every loop is bounded in count and time, and talks to loopback only.
"""

from __future__ import annotations

import random
import shutil
import socket
import struct
import threading
import time

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from support import PYTHON_MODELS
from support.models import identity_config, write_model
from support.server_process import ServerProcess

pytestmark = pytest.mark.slow

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
# The python backend tests' add_sub model (FP32 [4] inputs, not batched).
ADD_SUB = PYTHON_MODELS / "repo" / "add_sub"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    repo = tmp_path_factory.mktemp("soak")
    write_model(repo, "identity_fp32", identity_config("identity_fp32"))
    shutil.copytree(ADD_SUB, repo / "add_sub", ignore=shutil.ignore_patterns("__pycache__"))
    with ServerProcess([repo]) as process:
        yield process


def _frame(rng: random.Random) -> bytes:
    kind = rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, rng.randrange(256)])
    flags = rng.randrange(256)
    stream = rng.choice([0, 1, 3, rng.randrange(1 << 31)])
    payload = rng.randbytes(rng.choice([0, 1, 4, 5, 6, 8, 9, rng.randrange(64)]))
    length = len(payload) if rng.random() < 0.9 else rng.randrange(1 << 24)
    return struct.pack(">BHBBI", length >> 16, length & 0xFFFF, kind, flags, stream) + payload


def _exchange(address: tuple[str, int], data: bytes) -> None:
    with socket.create_connection(address, timeout=5) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(0.5)
            while sock.recv(65536):
                pass
        except OSError:
            pass  # reset or timed out: the server may close on a bad frame


def _address(url: str) -> tuple[str, int]:
    host, port = url.rsplit(":", 1)
    return host, int(port)


def _fuzz(server, module, url: str, junk) -> None:
    """1,500 connections sending `junk()` (two minutes at most), the server checked live every
    100 of them; then it must still infer, and its log must hold no traceback."""
    address = _address(url)
    deadline = time.monotonic() + 120
    client = module.InferenceServerClient(url)
    try:
        for i in range(1500):
            _exchange(address, junk())
            if i % 100 == 0:
                assert client.is_server_live()
            if time.monotonic() > deadline:
                break
        data = np.ones((1, 4), dtype=np.float32)
        inp = module.InferInput("INPUT0", [1, 4], "FP32")
        inp.set_data_from_numpy(data)
        np.testing.assert_array_equal(
            client.infer("identity_fp32", [inp]).as_numpy("OUTPUT0"), data)
    finally:
        client.close()
    assert "Traceback" not in server.log(), server.log()[-3000:]


def test_grpc_port_survives_random_frames(server):
    rng = random.Random(20261122)

    def junk() -> bytes:
        frames = b"".join(_frame(rng) for _ in range(rng.randrange(1, 6)))
        return (PREFACE if rng.random() < 0.9 else b"") + frames

    _fuzz(server, grpcclient, server.grpc_url, junk)


def _http_junk(rng: random.Random) -> bytes:
    body = rng.choice([
        b"", rng.randbytes(rng.randrange(200)), b'{"inputs": [', b'{"inputs":[{"name":"INPUT0",'
        b'"datatype":"FP32","shape":[1,2],"data":[1]}]}', b"[" * 5000,
    ])
    path = rng.choice([b"/v2/models/identity_fp32/infer", b"/v2/models/%ff/infer", b"/v2/../x",
                       b"/v2/repository/index", b"/v2/models/stats", b"/" + rng.randbytes(8)])
    length = str(len(body)).encode() if rng.random() < 0.8 else str(rng.randrange(1 << 20)).encode()
    head = b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nContent-Length: " + length + b"\r\n"
    if rng.random() < 0.3:
        length = str(rng.randrange(-5, 500)).encode()
        head += b"Inference-Header-Content-Length: " + length + b"\r\n"
    if rng.random() < 0.2:
        head += b"Content-Encoding: gzip\r\n"
    if rng.random() < 0.1:
        return rng.randbytes(rng.randrange(300))
    return head + b"\r\n" + body


def test_http_port_survives_malformed_requests(server):
    rng = random.Random(1122)
    _fuzz(server, httpclient, server.http_url, lambda: _http_junk(rng))


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_soak_mixed_clients_answers_right_and_memory_settles(server):
    errors: list[str] = []
    counts = [0, 0]
    stop = threading.Event()

    def run(index: int, protocol: str) -> None:
        rng = np.random.default_rng(index)
        module = httpclient if protocol == "http" else grpcclient
        client = module.InferenceServerClient(
            server.http_url if protocol == "http" else server.grpc_url)
        try:
            while not stop.is_set():
                a = rng.random(4, dtype=np.float32)
                b = rng.random(4, dtype=np.float32)
                inputs = [module.InferInput("INPUT0", [4], "FP32"),
                          module.InferInput("INPUT1", [4], "FP32")]
                inputs[0].set_data_from_numpy(a)
                inputs[1].set_data_from_numpy(b)
                result = client.infer("add_sub", inputs)
                if not (np.array_equal(result.as_numpy("OUTPUT0"), a + b)
                        and np.array_equal(result.as_numpy("OUTPUT1"), a - b)):
                    errors.append(f"{protocol}: wrong answer")
                counts[index % 2] += 1
        except Exception as exc:  # reported below: any failure fails the soak
            errors.append(f"{protocol}: {exc}")
        finally:
            client.close()

    pid = server.process.pid
    threads = [threading.Thread(target=run, args=(i, "http" if i % 2 else "grpc"))
               for i in range(6)]
    for thread in threads:
        thread.start()
    time.sleep(10)  # warm: caches, rings and pools reach their working size
    warm = _rss_kib(pid)
    warm_count = sum(counts)
    time.sleep(30)
    stop.set()
    for thread in threads:
        thread.join(timeout=30)
    grown = _rss_kib(pid) - warm
    served = sum(counts) - warm_count
    assert not errors, errors[:5]
    assert served > 1000, served
    # A per-request leak of even 1 KiB would add well over 1 MiB per thousand requests here.
    assert grown < 16 * 1024 + served // 8, (grown, served)


def test_every_rpc_survives_garbage_messages(server):
    """Random bytes as the request of every RPC: a status each time, never a crash or a trace."""
    import grpc
    from tritonclient.grpc import service_pb2 as pb

    rng = random.Random(52)
    methods = pb.DESCRIPTOR.services_by_name["GRPCInferenceService"].methods
    deadline = time.monotonic() + 120
    with grpc.insecure_channel(server.grpc_url) as channel:
        for _ in range(20):
            for method in methods:
                path = f"/inference.GRPCInferenceService/{method.name}"
                junk = rng.randbytes(rng.randrange(0, 200))
                try:
                    if method.client_streaming:
                        call = channel.stream_stream(path)
                        list(call(iter([junk, rng.randbytes(rng.randrange(50))]), timeout=10))
                    else:
                        channel.unary_unary(path)(junk, timeout=10)
                except grpc.RpcError as err:
                    assert err.code() != grpc.StatusCode.UNKNOWN, (method.name, err.details())
            if time.monotonic() > deadline:
                break
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        assert client.is_server_live()
    assert "Traceback" not in server.log(), server.log()[-3000:]
