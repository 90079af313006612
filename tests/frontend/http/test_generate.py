"""HTTP generate and generate_stream (Triton's generate extension), over raw HTTP.

The models are unmodified Triton Python-backend models (tests/support/python_models/generate/):
gen_echo reports what the endpoint made of a request, gen_batched batches, gen_stream is decoupled
and streams `count` responses (and notes in cancelled.txt each request it saw cancelled), gen_wait
(not decoupled) waits for its request to be cancelled and notes it the same way, gen_params
answers with response parameters, gen_fail always fails. The expected bodies, statuses and
headers are those Triton 2.51 sent for the same requests (tools/reference-triton.sh); where
Tritium answers 400 for a body Triton answers 500 (a malformed one), the README says so.
"""

from __future__ import annotations

import gzip
import http.client
import json
import shutil
import socket
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from support import PYTHON_MODELS
from support.raw_http import post
from support.server_process import ServerProcess
from tritium.errors import TritonError
from tritium.frontend.http.generate import _shape

MODELS = PYTHON_MODELS / "generate"
HOST = "127.0.0.1"
SINGLE = ("generate expects model to produce exactly 1 response, use generate stream for model "
          "that generates various number of responses")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # A copy: gen_stream writes cancelled.txt into its model directory.
    target = tmp_path_factory.mktemp("generate") / "repo"
    shutil.copytree(MODELS, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


@pytest.fixture(scope="module")
def server(repo: Path):
    with ServerProcess([repo]) as process:
        yield process


def echo(server: ServerProcess, document: dict[str, Any]) -> dict[str, Any]:
    reply = post(server, "/v2/models/gen_echo/generate", document)
    assert reply.status == 200, reply.body
    return reply.json()


# -- request mapping -----------------------------------------------------------------------------


def test_generate_response_as_triton_writes_it(server):
    reply = post(server, "/v2/models/gen_echo/generate", {"text_input": "hi"})
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/json"
    assert reply.headers["transfer-encoding"] == "chunked"  # as Triton sends it
    # Byte for byte Triton's answer: fields in name order, one-element outputs unwrapped.
    assert reply.body == (
        b'{"mat_out":0,"model_name":"gen_echo","model_version":"1","n_out":[1,2],'
        b'"params":"{}","shapes":"{\\"text_input\\": [[1], \\"object\\"]}",'
        b'"text_output":"echo: hi","vec_out":0.5}'
    )


def test_members_become_inputs_by_name_with_shapes_from_the_model(server):
    answer = echo(server, {"id": "r1", "text_input": "hi", "n": 5, "vec": [1, 2.5],
                           "flag": True, "mat": [1, 2]})
    assert json.loads(answer["shapes"]) == {
        "text_input": [[1], "object"],
        "n": [[1], "int32"],
        "vec": [[2], "float32"],
        "flag": [[1], "bool"],
        # dims [-1, -1]: the innermost variable dimension takes the elements, the others 1.
        "mat": [[1, 2], "int64"],
    }
    assert answer["id"] == "r1"
    assert answer["n_out"] == 5
    assert answer["vec_out"] == [1.0, 2.5]
    assert answer["mat_out"] == [1, 2]
    assert answer["text_output"] == "echo: hi"


def test_lists_nested_lists_and_empty_lists(server):
    answer = echo(server, {"text_input": ["hi"], "n": [[7]], "vec": []})
    assert json.loads(answer["shapes"]) == {
        "text_input": [[1], "object"], "n": [[1], "int32"], "vec": [[0], "float32"]}
    assert answer["n_out"] == 7
    assert answer["vec_out"] == []


def test_non_ascii_text_round_trips(server):
    assert echo(server, {"text_input": "héllo ☃"})["text_output"] == "echo: héllo ☃"


def test_batching_model_gets_the_batch_dimension(server):
    reply = post(server, "/v2/models/gen_batched/generate",
                 {"text_input": "hi", "n": 3, "vec": [1, 2]})
    assert reply.status == 200
    assert reply.body == (b'{"model_name":"gen_batched","model_version":"1",'
                          b'"shapes":"{\\"n\\": [1, 1], \\"text_input\\": [1, 1], '
                          b'\\"vec\\": [1, 2]}","text_output":"hi"}')


def test_other_members_and_parameters_reach_the_model_as_parameters(server):
    answer = echo(server, {"id": "r2", "text_input": "hi", "model_name": "x", "temperature": 0.5,
                           "parameters": {"a": 1, "b": "x", "c": True, "sequence_id": 5,
                                          "triton_x": 1}})
    # The id is also a parameter (Triton maps every unknown member); nothing is reserved. The
    # model reads them in request order, as compact JSON (Triton's words exactly).
    assert answer["params"] == (
        '{"id":"r2","model_name":"x","temperature":0.5,"a":1,"b":"x","c":true,'
        '"sequence_id":5,"triton_x":1}')
    assert answer["model_name"] == "gen_echo"


def test_response_parameters_are_fields_and_hide_outputs_of_their_name(server):
    # As Triton's http_server.cc (GenerateRequestClass) writes them; Triton 2.51's python
    # backend cannot send response parameters, so this was not compared with it.
    reply = post(server, "/v2/models/gen_params/generate", {"text_input": "x"})
    assert reply.body == (b'{"count":3,"flag":true,"model_name":"gen_params",'
                          b'"model_version":"1","note":"n","text_output":"from-param"}')


def test_a_parameter_named_like_an_input_is_that_input(server):
    answer = echo(server, {"text_input": "hi", "parameters": {"n": 7}})
    assert answer["n_out"] == 7
    assert json.loads(answer["params"]) == {}


@pytest.mark.parametrize("document, status, message", [
    ({"text_input": "hi", "n": [1, 2]}, 400,
     "The schema can not convert input 'n' to tensor with proper shape"),
    ({"text_input": ["a", "b"]}, 400,
     "The schema can not convert input 'text_input' to tensor with proper shape"),
    ({"text_input": "hi", "mat": [[1, 2], [3, 4]]}, 400,
     "Unable to parse 'data': Shape does not match true shape of 'data' field"),
    ({"text_input": "hi", "n": "abc"}, 400,
     "Unable to parse 'data': attempt to access JSON non-signed-integer as signed-integer"),
    ({"text_input": "hi", "flag": 1}, 400,
     "Unable to parse 'data': attempt to access JSON non-boolean as boolean"),
    ({"text_input": "hi", "vec": [1, True]}, 400,
     "Unable to parse 'data': attempt to access JSON non-number as double"),
    ({"text_input": 5}, 400,
     "Unable to parse JSON bytes array: attempt to access JSON non-string as string"),
    ({"id": 5, "text_input": "hi"}, 400,
     "Unable to parse 'id': attempt to access JSON non-string as string"),
    ({"text_input": "hi", "x": None}, 400,
     "parameter 'x' has invalid type. It should be either 'int', 'bool', or 'string'."),
    ({"text_input": "hi", "x": {"a": 1}}, 400,
     "parameter 'x' has invalid type. It should be either 'int', 'bool', or 'string'."),
    ({"text_input": "hi", "parameters": 5}, 400,
     "Expected JSON object for keyword: 'parameters': attempt to access JSON non-object as "
     "object"),
    ({"text_input": "hi", "parameters": {"x": [1]}}, 400,
     "Converting keyword: 'parameters': parameter 'x' has invalid type. It should be either "
     "'int', 'bool', or 'string'."),
    ({}, 400, "[request id: <id_unknown>] expected number of inputs between 1 and 5 but got 0 "
              "inputs for model 'gen_echo'. Got input(s) [], but missing required input(s) "
              "['text_input']. Please provide all required input(s)."),
    ([1], 400, "attempt to get members for non-object"),
], ids=["too-many-for-dims", "too-many-strings", "nested-too-deep", "string-for-int",
        "int-for-bool", "bool-for-float", "int-for-string", "id-not-string", "null-parameter",
        "object-parameter", "parameters-not-object", "list-in-parameters", "no-inputs",
        "not-an-object"])
def test_bad_requests_get_triton_messages(server, document, status, message):
    for endpoint in ("generate", "generate_stream"):
        reply = post(server, f"/v2/models/gen_echo/{endpoint}", document)
        assert reply.status == status, reply.body
        assert reply.headers["content-type"] == "application/json"
        assert reply.json()["error"].startswith(message)
    assert echo(server, {"text_input": "still"})["text_output"] == "echo: still"


@pytest.mark.parametrize("path, method, status, content_type, message", [
    ("nope/generate", "POST", 404, "application/json",
     "Request for unknown model: 'nope' is not found"),
    ("nope/generate_stream", "POST", 404, "application/json",
     "Request for unknown model: 'nope' is not found"),
    ("gen_echo/versions/7/generate", "POST", 404, "application/json",
     "Request for unknown model: 'gen_echo' version 7 is not found"),
    ("gen_echo/versions/x/generate", "POST", 404, "text/plain", "Not Found"),
    ("gen_echo/generate", "GET", 405, "application/json", "Method Not Allowed"),
    ("gen_echo/generate_stream", "GET", 405, "application/json", "Method Not Allowed"),
])
def test_routing_errors(server, path, method, status, content_type, message):
    body = None if method == "GET" else {"text_input": "hi"}
    reply = post(server, "/v2/models/" + path, body, method=method)
    assert (reply.status, reply.headers["content-type"]) == (status, content_type)
    assert reply.json() == {"error": message}


def test_version_in_the_path(server):
    reply = post(server, "/v2/models/gen_echo/versions/1/generate", {"text_input": "hi"})
    assert reply.status == 200
    assert reply.json()["model_version"] == "1"


def test_malformed_json(server):
    reply = post(server, "/v2/models/gen_echo/generate", raw=b'{"text_input":"hi"')
    assert reply.status == 400
    assert reply.json()["error"].startswith("failed to parse the request JSON buffer:")
    reply = post(server, "/v2/models/gen_echo/generate", raw=b"")
    assert (reply.status, reply.json()) == (400, {
        "error": "failed to parse the request JSON buffer: The document is empty. at 0"})



@pytest.mark.parametrize("depth", [1000, 100_000])
def test_json_nested_past_the_parser_is_a_400(server, depth):
    """On Python 3.11 orjson (1024 levels) takes documents a little deeper than Python's parser
    (about 990), which the check for a repeated input runs: a document between the two answered
    500 (a RecursionError). From 3.12 on Python's parser goes deeper (about 1500 on 3.12, 10000
    on 3.13), so at 1000 levels the repeated input is what is wrong with the request."""
    nested = b"[" * depth + b"]" * depth
    reply = post(server, "/v2/models/gen_echo/generate",
                 raw=b'{"text_input":"a","x":' + nested + b',"text_input":"b"}')
    try:  # the server runs this interpreter: its parser goes as deep as this one
        json.loads(nested)
        error = "[request id: <id_unknown>] input 'text_input' already exists in request"
    except RecursionError:
        error = "failed to parse the request JSON buffer: document nesting is too deep"
    assert (reply.status, reply.json()) == (400, {"error": error})


@pytest.mark.parametrize("body", [
    b'{"text_input":"a","text_input":"b"}',
    b'{"text_input":"a","text_\\u0069nput":"b"}',  # the same name, escaped
    b'{"text_input":"a","parameters":{"text_\\u0069nput":"b"}}',
], ids=["plain", "escaped", "in-parameters"])
def test_an_input_given_twice_is_refused(server, body):
    reply = post(server, "/v2/models/gen_echo/generate", raw=body)
    assert reply.status == 400
    # (from "parameters", after "Converting keyword: 'parameters': ")
    assert reply.json()["error"].endswith(
        "[request id: <id_unknown>] input 'text_input' already exists in request")

# -- compression ---------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", ""])
def test_generate_refuses_any_content_encoding(server, encoding):
    # Triton 2.51 does not decompress generate bodies, not even gzip.
    body = json.dumps({"text_input": "hi"}).encode()
    raw = gzip.compress(body) if encoding == "gzip" else body
    for endpoint in ("generate", "generate_stream"):
        reply = post(server, f"/v2/models/gen_echo/{endpoint}", raw=raw,
                     headers={"Content-Encoding": encoding})
        assert reply.status == 400
        assert reply.json() == {
            "error": "Unsupported content-encoding, only 'identity' is supported."}


def test_generate_identity_encoding_and_no_compressed_answers(server):
    reply = post(server, "/v2/models/gen_echo/generate", {"text_input": "hi"},
                 headers={"Content-Encoding": "identity", "Accept-Encoding": "gzip"})
    assert reply.status == 200
    assert "content-encoding" not in reply.headers
    assert reply.json()["text_output"] == "echo: hi"


# -- decoupled models and errors -----------------------------------------------------------------


def test_generate_on_a_decoupled_model_with_one_response(server):
    reply = post(server, "/v2/models/gen_stream/generate", {"text_input": "hi", "count": 1})
    assert reply.status == 200
    assert reply.body == (b'{"index":0,"model_name":"gen_stream","model_version":"1",'
                          b'"text_output":"hi 0"}')


@pytest.mark.parametrize("count", [0, 3])
def test_generate_wants_exactly_one_response(server, count):
    reply = post(server, "/v2/models/gen_stream/generate", {"text_input": "hi", "count": count})
    # As Triton: the status is the first response's (200), the body an error.
    assert reply.status == 200
    assert reply.json() == {"error": SINGLE}


def test_generate_with_a_failing_first_response(server):
    reply = post(server, "/v2/models/gen_stream/generate",
                 {"text_input": "hi", "count": 2, "fail_at": 0})
    assert reply.status == 400
    assert reply.json() == {"error": SINGLE}
    reply = post(server, "/v2/models/gen_stream/generate",
                 {"text_input": "hi", "count": 1, "fail_at": 0})
    assert reply.status == 400
    assert reply.json() == {"error": "failed at 0"}


def test_model_error_is_400_whatever_its_code(server):
    reply = post(server, "/v2/models/gen_fail/generate", {"text_input": "hi"})
    assert (reply.status, reply.json()) == (400, {"error": "model says no"})
    reply = post(server, "/v2/models/gen_fail/generate_stream", {"text_input": "hi"})
    assert reply.status == 400
    assert reply.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert reply.events() == [{"error": "model says no"}]


# -- generate_stream -----------------------------------------------------------------------------


def test_generate_stream_sends_each_response_as_an_event(server):
    reply = post(server, "/v2/models/gen_stream/generate_stream",
                 {"id": "s1", "text_input": "hi", "count": 3})
    assert reply.status == 200
    assert reply.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert reply.headers["transfer-encoding"] == "chunked"
    assert reply.body == b"".join(
        b'data: {"id":"s1","index":%d,"model_name":"gen_stream","model_version":"1",'
        b'"text_output":"hi %d"}\n\n' % (i, i) for i in range(3)
    )


def test_generate_stream_error_mid_stream_is_an_event_and_the_stream_goes_on(server):
    reply = post(server, "/v2/models/gen_stream/generate_stream",
                 {"text_input": "hi", "count": 3, "fail_at": 1})
    assert reply.status == 200  # set by the first response
    events = reply.events()
    assert events[1] == {"error": "failed at 1"}
    assert [e.get("index") for e in events] == [0, None, 2]


def test_generate_stream_first_response_failing_sets_400(server):
    reply = post(server, "/v2/models/gen_stream/generate_stream",
                 {"text_input": "hi", "count": 2, "fail_at": 0})
    assert reply.status == 400
    assert reply.events() == [
        {"error": "failed at 0"},
        {"index": 1, "model_name": "gen_stream", "model_version": "1", "text_output": "hi 1"},
    ]


def test_generate_stream_with_no_responses_and_on_an_ordinary_model(server):
    reply = post(server, "/v2/models/gen_stream/generate_stream", {"text_input": "hi", "count": 0})
    assert (reply.status, reply.body) == (200, b"")
    reply = post(server, "/v2/models/gen_echo/generate_stream", {"text_input": "hi"})
    assert reply.status == 200
    [event] = reply.events()
    assert event["text_output"] == "echo: hi"


def test_keep_alive_across_streams_and_other_requests(server):
    conn = http.client.HTTPConnection(HOST, server.http_port, timeout=30)
    try:
        for count in (2, 0, 1):
            conn.request("POST", "/v2/models/gen_stream/generate_stream",
                         body=json.dumps({"text_input": "k", "count": count}))
            response = conn.getresponse()
            assert response.status == 200
            assert response.read().count(b"data: ") == count
        conn.request("POST", "/v2/models/gen_echo/generate",
                     body=json.dumps({"text_input": "k"}))
        assert json.loads(conn.getresponse().read())["text_output"] == "echo: k"
        conn.request("GET", "/v2/health/ready")
        assert conn.getresponse().status == 200
    finally:
        conn.close()


def read_until(sock: socket.socket, marker: bytes, data: bytes = b"") -> bytes:
    while marker not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before {marker!r}: {data!r}"
        data += chunk
    return data


def raw_stream(server: ServerProcess, document: dict[str, Any]) -> socket.socket:
    body = json.dumps(document).encode()
    sock = socket.create_connection((HOST, server.http_port), timeout=30)
    sock.sendall(b"POST /v2/models/gen_stream/generate_stream HTTP/1.1\r\nHost: x\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    return sock


def test_events_are_written_as_they_come_in_chunks(server):
    sock = raw_stream(server, {"text_input": "c", "count": 3, "delay_ms": 300})
    try:
        data = read_until(sock, b"\n\n", read_until(sock, b"\r\n\r\n"))
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 OK\r\n")
        assert b"transfer-encoding: chunked" in head.lower()
        # The first event is one chunk, out while the model is still producing the others.
        first = (b'data: {"index":0,"model_name":"gen_stream","model_version":"1",'
                 b'"text_output":"c 0"}\n\n')
        assert body.startswith(b"%x\r\n%s\r\n" % (len(first), first))
        assert b"0\r\n\r\n" not in body
        data = read_until(sock, b"\r\n0\r\n\r\n", body)
        assert data.endswith(b'"text_output":"c 2"}\n\n\r\n0\r\n\r\n')
    finally:
        sock.close()


def test_pipelined_requests_behind_a_stream_are_answered_in_order(server):
    body = json.dumps({"text_input": "p", "count": 2, "delay_ms": 100}).encode()
    sock = socket.create_connection((HOST, server.http_port), timeout=30)
    try:
        sock.sendall(b"POST /v2/models/gen_stream/generate_stream HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Length: %d\r\n\r\n%s"
                     b"GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\n" % (len(body), body))
        stream, _, ready = read_until(sock, b"\r\n0\r\n\r\n").partition(b"\r\n0\r\n\r\n")
        ready = read_until(sock, b"\r\n\r\n", ready)
        assert stream.count(b"data: ") == 2
        assert ready.startswith(b"HTTP/1.1 200 OK\r\n")
        assert b"content-length: 0\r\n" in ready
    finally:
        sock.close()




def wait_for(condition: Any, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_client_disconnecting_mid_stream_cancels_the_request(server, repo):
    log = repo / "gen_stream" / "cancelled.txt"
    sock = raw_stream(server, {"id": "gone", "text_input": "x", "count": 100, "delay_ms": 100})
    read_until(sock, b"data: ")
    sock.close()
    # The model sees request.is_cancelled() and stops early (100 responses would take 10 s).
    wait_for(lambda: log.exists() and "gone" in log.read_text().split(),
             "the model never saw the cancellation")
    wait_for(lambda: server.metric("nv_inference_pending_request_count", "gen_stream") == 0,
             "the cancelled request is still pending")
    reply = post(server, "/v2/models/gen_stream/generate_stream",
                 {"text_input": "after", "count": 2})
    assert [e["text_output"] for e in reply.events()] == ["after 0", "after 1"]


@pytest.mark.parametrize("model, path, document", [
    ("gen_stream", "generate", {"id": "g-decoupled", "text_input": "x", "count": 100,
                                "delay_ms": 100}),
    ("gen_wait", "generate", {"id": "g-ordinary", "text_input": "x"}),
    ("gen_wait", "infer", {"id": "i-ordinary", "inputs": [
        {"name": "text_input", "datatype": "BYTES", "shape": [1], "data": ["x"]}]}),
], ids=["generate-decoupled", "generate-ordinary", "infer-ordinary"])
def test_client_disconnecting_before_the_answer_cancels(server, repo, model, path, document):
    """Not only mid-stream: gen_wait (not decoupled) waits up to 10 s for
    request.is_cancelled(). Triton 2.51's python backend did not report it to gen_wait (it did
    to the decoupled gen_stream); README says so."""
    log = repo / model / "cancelled.txt"
    body = json.dumps(document).encode()
    sock = socket.create_connection((HOST, server.http_port), timeout=30)
    sock.sendall(b"POST /v2/models/%s/%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
                 % (model.encode(), path.encode(), len(body), body))
    time.sleep(0.3)  # let the request reach the model
    sock.close()
    wait_for(lambda: log.exists() and document["id"] in log.read_text().split(),
             "the model never saw the cancellation")
    assert echo(server, {"text_input": "ok"})["text_output"] == "echo: ok"


def test_server_metadata_does_not_list_generate(server):
    # As Triton 2.51, which serves generate without listing it.
    with urllib.request.urlopen(f"http://{server.http_url}/v2", timeout=10) as response:
        extensions = json.loads(response.read())["extensions"]
    assert "generate" not in extensions


# -- the shape rule on its own -------------------------------------------------------------------


@pytest.mark.parametrize("dims, count, shape", [
    ([1], 1, (1,)),
    ([-1], 4, (4,)),
    ([-1, -1], 2, (1, 2)),
    ([-1, 1], 1, (1, 1)),
    ([2, -1], 6, (2, 3)),
    ([-1, 2], 4, (2, 2)),
    ([-1, 2, -1], 4, (1, 2, 2)),
    ([3], 3, (3,)),
    ([], 1, ()),
    ([-1], 0, (0,)),
])
def test_shape_rule(dims, count, shape):
    assert _shape("x", dims, count) == shape


@pytest.mark.parametrize("dims, count", [([2], 3), ([1], 2), ([], 2), ([2, 2], 2), ([0], 1)])
def test_shape_rule_refusals(dims, count):
    with pytest.raises(TritonError, match="The schema can not convert input 'x' to tensor"):
        _shape("x", dims, count)
