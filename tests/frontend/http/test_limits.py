"""Request limits: the HTTP body size (--http-max-input-size, 64 MB by default, after
decompression too), chunked bodies of any size, JSON nesting depth, requested outputs."""

from __future__ import annotations

import gzip
import json
import socket
import subprocess

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from support.models import identity_config, write_model
from support.server_process import ServerProcess
from tritium.frontend.extensions.limits import MAX_REQUESTED_OUTPUTS

MODEL = "identity_fp32"
LIMIT = 4096
TOO_LARGE = (b'{"error":"Request body size exceeds the maximum allowed value of %d bytes. '
             b'Use --http-max-input-size to increase the limit."}')


@pytest.fixture(scope="module")
def small_limit(tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp("limits_repo")
    write_model(repo, MODEL, identity_config(MODEL))
    with ServerProcess([repo], f"--http-max-input-size={LIMIT}") as process:
        yield process


def _body(values: int, pad: int = 0) -> bytes:
    document = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, values],
                            "data": [1.5] * values}]}
    return json.dumps(document).encode() + b" " * pad


def _read_response(sock: socket.socket) -> tuple[int, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed after {data!r}"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length")))
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk
        rest += chunk
    return int(head.split()[1]), rest[:length]


def _post(sock: socket.socket, body: bytes, chunk: int | None = None,
          extra: bytes = b"") -> tuple[int, bytes]:
    path = f"/v2/models/{MODEL}/infer".encode()
    if chunk is None:
        sock.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\n%sContent-Length: %d\r\n\r\n"
                     % (path, extra, len(body)) + body)
    else:
        sock.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\n%sTransfer-Encoding: chunked\r\n\r\n"
                     % (path, extra))
        for start in range(0, len(body), chunk):
            part = body[start:start + chunk]
            sock.sendall(b"%x\r\n%s\r\n" % (len(part), part))
        sock.sendall(b"0\r\n\r\n")
    return _read_response(sock)


def _connect(server: ServerProcess) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.http_port), timeout=30)
    return sock


def test_a_body_at_the_limit_is_served(small_limit) -> None:
    body = _body(10)
    body += b" " * (LIMIT - len(body))
    with _connect(small_limit) as sock:
        status, answer = _post(sock, body)
    assert status == 200 and json.loads(answer)["outputs"][0]["data"] == [1.5] * 10


@pytest.mark.parametrize("chunk", [None, 100, 1000])
def test_a_larger_body_is_refused_and_the_connection_keeps_serving(small_limit, chunk) -> None:
    with _connect(small_limit) as sock:
        assert _post(sock, _body(10, pad=LIMIT), chunk) == (400, TOO_LARGE % LIMIT)
        status, answer = _post(sock, _body(3), chunk)
        assert status == 200 and json.loads(answer)["outputs"][0]["shape"] == [1, 3]


def test_the_limit_applies_after_decompression(small_limit) -> None:
    compressed = gzip.compress(_body(10, pad=LIMIT * 10))
    assert len(compressed) < LIMIT
    with _connect(small_limit) as sock:
        status, answer = _post(sock, compressed, extra=b"Content-Encoding: gzip\r\n")
    assert status == 400
    assert json.loads(answer)["error"] == (
        f"Decompressed request body size exceeds the maximum allowed value of {LIMIT} bytes. "
        "Use --http-max-input-size to increase the limit.")


def test_the_default_limit_is_64_mb(server) -> None:
    with _connect(server) as sock:
        assert _post(sock, _body(1, pad=64 * 1024 * 1024)) == (400, TOO_LARGE % (64 << 20))


def test_a_large_chunked_body_in_small_chunks(server) -> None:
    values = 200_000  # ~1.4 MB of JSON in 700 chunks of 2 kB
    with _connect(server) as sock:
        status, answer = _post(sock, _body(values), chunk=2048)
    assert status == 200
    assert np.all(np.asarray(json.loads(answer)["outputs"][0]["data"]) == 1.5)


def test_deeply_nested_json_is_refused(server) -> None:
    depth = 100_000
    body = (b'{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,1],"data":'
            + b"[" * depth + b"]" * depth + b"}]}")
    with _connect(server) as sock:
        status, answer = _post(sock, body)
        assert (status, json.loads(answer)) == (400, {
            "error": "failed to parse the request JSON buffer: document nesting is too deep"})
        assert _post(sock, _body(2))[0] == 200


def test_too_many_requested_outputs_are_refused(server) -> None:
    message = (f"request for model '{MODEL}' asks for {MAX_REQUESTED_OUTPUTS + 1} outputs; at "
               f"most {MAX_REQUESTED_OUTPUTS} outputs may be requested")
    document = json.loads(_body(2))
    document["outputs"] = [{"name": "OUTPUT0"}] * (MAX_REQUESTED_OUTPUTS + 1)
    with _connect(server) as sock:
        assert _post(sock, json.dumps(document).encode()) == (
            400, json.dumps({"error": message}, separators=(",", ":")).encode())
        document["outputs"] = [{"name": "OUTPUT0"}] * 2  # a repeated name is fine, as in Triton
        assert _post(sock, json.dumps(document).encode())[0] == 200

    client = grpcclient.InferenceServerClient(server.grpc_url)
    tensor = grpcclient.InferInput("INPUT0", [1, 2], "FP32")
    tensor.set_data_from_numpy(np.ones((1, 2), np.float32))
    outputs = [grpcclient.InferRequestedOutput("OUTPUT0")] * (MAX_REQUESTED_OUTPUTS + 1)
    with pytest.raises(InferenceServerException) as info:
        client.infer(MODEL, [tensor], outputs=outputs)
    assert info.value.status() == "StatusCode.INVALID_ARGUMENT"
    assert info.value.message() == message


@pytest.mark.parametrize("head", [
    b"Content-Length: 99999999999999\r\n",
    b"Transfer-Encoding: chunked\r\n\r\nffffffffffff",
])
def test_an_endless_body_is_refused_without_waiting_for_its_end(small_limit, head) -> None:
    with _connect(small_limit) as sock:
        sock.sendall(b"POST /v2/models/%s/infer HTTP/1.1\r\nHost: x\r\n%s\r\n"
                     % (MODEL.encode(), head) + b"a" * (3 * LIMIT))
        assert _read_response(sock) == (400, TOO_LARGE % LIMIT)
        assert sock.recv(1) == b""  # and the connection is closed


@pytest.mark.parametrize("flag, what", [
    ("--http-max-input-size=0", "a whole number greater than 0"),
    ("--http-max-input-size=-1", "a whole number greater than 0"),
    ("--model-load-thread-count=0", "a whole number greater than 0"),
    # 0 is taken: only the start-up poll, as tritonserver.
    ("--repository-poll-secs=-2.5", "a number of seconds of 0 or more"),
    ("--repository-poll-secs=nan", "a number of seconds of 0 or more"),
])
def test_a_limit_out_of_range_is_refused_at_start(tmp_path, flag, what) -> None:
    process = ServerProcess([tmp_path], flag)
    run = subprocess.run(process.command(), env=process.environment(), capture_output=True,
                         text=True, timeout=60)
    name, value = flag.split("=")
    assert run.returncode == 2
    assert run.stderr.endswith(f"error: argument {name}: expected {what}, got '{value}'\n")


def test_a_chunked_body_that_also_has_content_length_is_read_by_its_chunks(small_limit) -> None:
    # What `requests` sends for a generator body with a Content-Length header set: RFC 9112 lets
    # the server go by Transfer-Encoding if it closes the connection after the answer.
    body = _body(4)
    with _connect(small_limit) as sock:
        status, answer = _post(sock, body, chunk=7, extra=b"Content-Length: 3\r\n")
        assert status == 200, answer
        assert json.loads(answer)["outputs"][0]["data"] == [1.5] * 4
        assert sock.recv(1) == b""  # closed: nothing after it is read as another request


@pytest.mark.parametrize("head", [
    b"Content-Length: 5\r\nContent-Length: 5\r\n",
    b"Content-Length: 5\r\nTransfer-Encoding: chunked, identity\r\n",
    b"Content-Length: 5\r\nTransfer-Encoding: xchunked\r\n",
    b"Transfer-Encoding: xchunked\r\n",
    b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
])
def test_ambiguous_body_framing_is_refused(small_limit, head) -> None:
    with _connect(small_limit) as sock:
        sock.sendall(b"POST /v2/models/%s/infer HTTP/1.1\r\nHost: x\r\n%s\r\n0\r\n\r\n"
                     % (MODEL.encode(), head))
        status, _ = _read_response(sock)
        assert status == 400
        assert sock.recv(1) == b""
