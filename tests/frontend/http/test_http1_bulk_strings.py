"""Large JSON infer bodies of strings (BYTES `data`), against a live server on loopback.

Their strings are read a slice at a time (frontend/http/json_cuts.py finds where the array's
elements part, outside the strings), so that the thread reading them lets the event loop have
the interpreter lock between slices: 4 million strings read in one call of the JSON reader held
it for 0.26 s, and every other client waited that long. What a user sees is the same strings
back, nested or not, whatever they hold; a faulty body gets the message the whole-document
reader gives (Triton's).
"""

from __future__ import annotations

import http.client
import json
import threading

import pytest
import tritonclient.http as httpclient
from tritonclient.utils import deserialize_bytes_tensor

from support.attack_measure import Measured, MiB
from support.server_process import ServerProcess
from tritium.errors import TritonError
from tritium.frontend.extensions.json_codec import load_json
from tritium.frontend.http.json_spans import JsonSpan, load_request_json

# What strings may hold that a search for commas or brackets would misread.
AWKWARD = ['a,b', '[x]', '"q"', "back\\slash\\", "\\\"", "é", "😀", "", "line\nbreak", "],[",
           "\\", '\\"],["']
COUNT = 200_000  # about 3 MB of JSON: read in slices


def _strings(count: int) -> list[str]:
    return [AWKWARD[i % len(AWKWARD)] + str(i) for i in range(count)]


def _body(data: object, shape: list[int], ascii_only: bool = True) -> bytes:
    return json.dumps({"inputs": [{"name": "INPUT0", "shape": shape, "datatype": "BYTES",
                                   "data": data}],
                       "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]},
                      ensure_ascii=ascii_only).encode()


def _post(server: ServerProcess, body: bytes) -> tuple[int, bytes, dict[str, str]]:
    host, port = server.http_url.split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=120)
    try:
        connection.request("POST", "/v2/models/identity_bytes/infer", body)
        answer = connection.getresponse()
        return answer.status, answer.read(), {k.lower(): v for k, v in answer.getheaders()}
    finally:
        connection.close()


def _strings_back(status: int, payload: bytes, headers: dict[str, str]) -> list[str]:
    assert status == 200, payload[:300]
    raw = payload[int(headers["inference-header-content-length"]):]
    return [item.decode() for item in deserialize_bytes_tensor(raw)]


@pytest.fixture(scope="module")
def server(standard_repo):
    with ServerProcess([standard_repo]) as process:
        yield process


@pytest.mark.parametrize("form", ["flat", "batch of one", "rows"])
@pytest.mark.parametrize("ascii_only", [True, False])
def test_strings_come_back_as_sent(server, form, ascii_only) -> None:
    strings = _strings(COUNT)
    data: object = strings
    shape = [1, COUNT]
    if form == "batch of one":
        data = [strings]
    elif form == "rows":
        shape = [8, COUNT // 8]
        data = [strings[row * shape[1]:(row + 1) * shape[1]] for row in range(8)]
    body = _body(data, shape, ascii_only)
    span = load_request_json(body)["inputs"][0]["data"]
    assert isinstance(span, JsonSpan) and len(list(span.slices())) > 1  # read in slices
    assert _strings_back(*_post(server, body)) == strings


def _whole_document_error(body: bytes, shape: list[int]) -> str:
    """What a small body with the same fault is told: the whole-document reader's message."""
    try:
        document = load_json(body)
    except TritonError as exc:
        return exc.message
    data = document["inputs"][0]["data"]
    if any(type(item) is not str for item in data):
        return "Unable to parse JSON bytes array: attempt to access JSON non-string as string"
    count = shape[0] * shape[1]
    if len(data) > count:
        return (f"[request id: <id_unknown>] unexpected number of string elements {count + 1} "
                "for inference input "
                f"'INPUT0' for model 'identity_bytes', expecting {count}")
    return (f"[request id: <id_unknown>] expected {count} string elements for inference input "
            f"'INPUT0' for model 'identity_bytes', got {len(data)}")


@pytest.mark.parametrize("fault, shape", [
    (b"", [1, COUNT + 1]),  # one string short
    (b"", [1, COUNT - 1]),  # one too many
    (b',"x",7', [1, COUNT + 2]),  # a number late
    (b',"x",null', [1, COUNT + 2]),
    (b',"x",,"y"', [1, COUNT + 3]),  # malformed late
    (b',"\\x"', [1, COUNT + 1]),  # a bad escape late
    (b',"open', [1, COUNT + 1]),  # a string that never ends
    (b',"x"]', [1, COUNT + 1]),  # a bracket too many
    (b',["x"]', [1, COUNT + 1]),  # nested late
])
def test_a_fault_late_in_a_large_body_is_refused_as_in_a_small_one(server, fault, shape) -> None:
    text = json.dumps(_strings(COUNT)).encode()
    body = _body([], shape).replace(b'"data": []', b'"data": ' + text[:-1] + fault + b"]")
    status, payload, _ = _post(server, body)
    if fault == b',["x"]':  # any nesting whose leaves fill the shape is read, as by Triton
        assert _strings_back(status, payload, _)[-1] == "x"
        return
    assert status == 400, payload[:300]
    assert json.loads(payload)["error"] == _whole_document_error(body, shape)


def test_4_million_strings(server) -> None:
    """4 million strings (20 MB of JSON) echoed while a tritonclient calls beside them: its
    slowest call is printed (run with -s)."""
    count = 4_000_000
    strings = [f"s{i % 100:02d}" for i in range(count)]
    body = _body(strings, [1, count])
    answers: list = []
    with Measured(server, "4 million strings in JSON", 1500 * MiB, httpclient) as measured:
        thread = threading.Thread(target=lambda: answers.append(_post(server, body)))
        thread.start()
        while thread.is_alive():
            measured.sample()
            thread.join(0.1)
    assert _strings_back(*answers[0]) == strings
