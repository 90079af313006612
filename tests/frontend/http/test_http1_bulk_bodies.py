"""Large JSON infer bodies, plain and gzip'd, against a live server on loopback.

Each is decoded off the event loop, its tensor data read in slices straight into the tensor
(frontend/http/json_spans.py), while a well-behaved tritonclient keeps calling infer beside it:
what a user sees is the right answer for the big request, every answer for the good client and
the server's memory bounded (its slowest call is printed; run with `-s`). Before, four gzip
bodies of ~55 KB inflating to ~60 MB of JSON each grew the server by 883 MB and kept the good
client waiting 6.4 s; the same bodies a few kilobytes long must keep Triton's answers.
"""

from __future__ import annotations

import gzip
import http.client
import json
import socket
import threading
import urllib.error
import urllib.request

import numpy as np
import pytest
import tritonclient.http as httpclient

from support.attack_measure import Measured
from support.server_process import ServerProcess

MiB = 1024 * 1024
VALUE = b"0.123456789"  # 12 bytes with its comma: a 60 MB body holds 5 million elements


def _body(count: int, data: bytes | None = None, datatype: str = "FP32") -> bytes:
    """An infer request for identity_fp32 (dims [-1]) in JSON, its output asked in binary."""
    if data is None:
        data = b"[" + b",".join([VALUE] * count) + b"]"
    return (b'{"inputs":[{"name":"INPUT0","shape":[1,%d],"datatype":"%s","data":%s}],'
            b'"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}]}'
            % (count, datatype.encode(), data))


def _post(server: ServerProcess, body: bytes, headers: dict[str, str] | None = None
          ) -> tuple[int, bytes, dict[str, str]]:
    host, port = server.http_url.split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=120)
    try:
        connection.request("POST", "/v2/models/identity_fp32/infer", body, headers or {})
        answer = connection.getresponse()
        return answer.status, answer.read(), {k.lower(): v for k, v in answer.getheaders()}
    finally:
        connection.close()


def _output(status: int, payload: bytes, headers: dict[str, str]) -> np.ndarray:
    assert status == 200, payload[:300]
    header_length = int(headers["inference-header-content-length"])
    return np.frombuffer(payload[header_length:], np.float32)


@pytest.fixture(scope="module")
def server(standard_repo):
    """A server of its own (its memory is what these tests measure), in explicit mode so that
    a test can unload a model."""
    with ServerProcess([standard_repo], "--model-control-mode=explicit",
                       "--load-model=*") as process:
        yield process


def test_four_gzip_bodies_inflating_to_60_mb_each(server) -> None:
    count = 5_000_000
    body = gzip.compress(_body(count), 9)
    print(f"\n{len(body) / 1024:.0f} KiB gzip'd, {len(_body(count)) / MiB:.0f} MiB of JSON")
    answers: list = [None] * 4

    def send(index: int) -> None:
        answers[index] = _post(server, body, {"Content-Encoding": "gzip"})

    with Measured(server, "4 gzip bodies of 60 MB of JSON", 300 * MiB,
                  httpclient) as measured:
        threads = [threading.Thread(target=send, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        while any(thread.is_alive() for thread in threads):
            measured.sample()
            threads[0].join(0.1)
    for answer in answers:
        output = _output(*answer)
        assert output.shape == (count,)
        assert (output == np.float32(0.123456789)).all()


def test_a_60_mb_json_body(server) -> None:
    count = 5_000_000
    body = _body(count)
    answers: list = []
    with Measured(server, "one 60 MB JSON body", 300 * MiB, httpclient) as measured:
        thread = threading.Thread(target=lambda: answers.append(_post(server, body)))
        thread.start()
        while thread.is_alive():
            measured.sample()
            thread.join(0.1)
    output = _output(*answers[0])
    assert output.shape == (count,)
    assert (output == np.float32(0.123456789)).all()


def _nested(rows: int) -> tuple[bytes, np.ndarray]:
    values = np.arange(rows * 4, dtype=np.float32).reshape(rows, 4) / 8
    return json.dumps(values.tolist(), indent=1).encode(), values.reshape(-1)


def test_nested_and_pretty_printed_data_reads_as_the_small_body_does(server) -> None:
    data, values = _nested(100_000)  # ~3 MB with the indentation: read in slices
    assert len(data) > 2 * MiB
    np.testing.assert_array_equal(_output(*_post(server, _body(values.size, data))), values)


@pytest.mark.parametrize("fault, message", [
    (b"+1", "failed to parse the request JSON buffer: Invalid value. at "),
    (b"1 2", "failed to parse the request JSON buffer: "),
    (b"[1,]", "failed to parse the request JSON buffer: Invalid value. at "),
    (b"[1[,2]]", "failed to parse the request JSON buffer: "),
    (b"true", "Unable to parse 'data': attempt to access JSON non-number as double"),
])
def test_a_fault_late_in_a_large_body_is_refused_as_in_a_small_one(server, fault, message):
    data, values = _nested(100_000)
    for count, text in ((values.size + 1, data[:-1] + b"," + fault + b"]"),
                        (2, b"[0.5," + fault + b"]")):
        status, payload, _ = _post(server, _body(count, text))
        assert status == 400, payload[:200]
        assert json.loads(payload)["error"].startswith(message), payload[:300]


def test_a_client_gone_during_decoding_costs_nothing(server) -> None:
    host, port = server.http_url.split(":")
    body = _body(2_000_000)
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(b"POST /v2/models/identity_fp32/infer HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body) + body)
    # Its model slot came back: the model unloads (it would wait for a held request).
    unload = urllib.request.Request(
        f"http://{server.http_url}/v2/repository/models/identity_fp32/unload", b"{}",
        method="POST")
    with urllib.request.urlopen(unload, timeout=60) as answer:
        assert answer.status == 200
    load = urllib.request.Request(
        f"http://{server.http_url}/v2/repository/models/identity_fp32/load", b"{}",
        method="POST")
    with urllib.request.urlopen(load, timeout=60) as answer:
        assert answer.status == 200
    status, payload, headers = _post(server, _body(3))
    assert _output(status, payload, headers).tolist() == [np.float32(0.123456789)] * 3


def test_a_large_generate_body(server) -> None:
    """The generate extension's bodies are decoded off the loop too."""
    count = 2_000_000
    body = b'{"INPUT0":[' + b",".join([b"1.5"] * count) + b"]}"
    answers: list = []

    def send() -> None:
        request = urllib.request.Request(
            f"http://{server.http_url}/v2/models/identity_fp32/generate", body, method="POST")
        with urllib.request.urlopen(request, timeout=120) as answer:
            answers.append(json.loads(answer.read()))

    with Measured(server, f"a {len(body) / MiB:.0f} MiB generate body", 300 * MiB,
                  httpclient) as measured:
        thread = threading.Thread(target=send)
        thread.start()
        while thread.is_alive():
            measured.sample()
            thread.join(0.1)
    output = answers[0]["OUTPUT0"]
    assert len(output) == count and set(output) == {1.5}


def _generate(server: ServerProcess, body: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"http://{server.http_url}/v2/models/identity_fp32/generate", body, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.parametrize("template", [
    b'{"parameters": {"INPUT0": %s}, "note": "in parameters"}',
    b'{"id": "pretty", "INPUT0":\n %s\n}',
])
def test_large_generate_inputs_read_in_slices_as_small_ones_read(server, template) -> None:
    values = np.arange(300_000, dtype=np.float32) / 4
    data = b"[" + b", ".join(b"%r" % float(v) for v in values) + b"]"
    assert len(data) > 2 * MiB
    status, answer = _generate(server, template % data)
    assert status == 200, answer
    np.testing.assert_array_equal(np.array(answer["OUTPUT0"], np.float32), values)


@pytest.mark.parametrize("fault, message", [
    (b"+1", "failed to parse the request JSON buffer: Invalid value. at "),
    (b"true", "attempt to access JSON non-number as double"),
])
def test_a_fault_late_in_a_large_generate_body_is_refused_as_in_a_small_one(server, fault,
                                                                           message) -> None:
    for data in (b"[" + b"0.5," * 400_000 + fault + b"]", b"[0.5," + fault + b"]"):
        status, answer = _generate(server, b'{"INPUT0": %s}' % data)
        assert status == 400, answer
        assert message in answer["error"], answer
    assert _generate(server, b'{"INPUT0": [0.5, 1.5]}') == (200, {
        "model_name": "identity_fp32", "model_version": "1", "OUTPUT0": [0.5, 1.5]})


def test_a_bytes_tensor_of_millions_of_short_strings(server) -> None:
    """4 million 2-byte strings (a 24 MB binary body) through identity_bytes and back in
    binary: serialising the answer joined 8 million parts at once, and the join's buffer view
    per part took the server to +1.1 GB; a run at a time, the strings themselves are most of
    what it holds."""
    count = 4_000_000
    strings = [b"%02d" % (i % 100) for i in range(count)]
    data = b"".join(b"\x02\x00\x00\x00" + s for s in strings)
    header = json.dumps({
        "inputs": [{"name": "INPUT0", "shape": [1, count], "datatype": "BYTES",
                    "parameters": {"binary_data_size": len(data)}}],
        "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}],
    }).encode()
    host, port = server.http_url.split(":")
    with Measured(server, "4M short strings", 600 * MiB, httpclient) as measured:
        done = threading.Event()

        def sample() -> None:  # the peak is while the answer is made, not after
            while not done.wait(0.02):
                measured.sample()

        sampler = threading.Thread(target=sample)
        sampler.start()
        connection = http.client.HTTPConnection(host, int(port), timeout=120)
        try:
            connection.request("POST", "/v2/models/identity_bytes/infer", header + data,
                               {"Inference-Header-Content-Length": str(len(header))})
            answer = connection.getresponse()
            payload = answer.read()
        finally:
            connection.close()
            done.set()
            sampler.join()
    assert answer.status == 200, payload[:300]
    header_length = int(answer.getheader("Inference-Header-Content-Length"))
    assert payload[header_length:] == data
