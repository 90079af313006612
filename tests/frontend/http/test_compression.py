"""HTTP content coding on infer, over raw HTTP: which request codings are refused and how, and
which response coding an Accept-Encoding header gets.

Every case was sent to Triton 2.51 (tools/reference-triton.sh) and the expectations are its
answers: only `gzip`, `deflate` and `identity` (exact, lowercase) are read; anything else,
an empty value included, is 501 "Unsupported compression type" with `Accept-Encoding: gzip,
deflate`; Accept-Encoding picks the highest `;q=` weight among identity/gzip/deflate, the
first of equal weights, with Triton's strict parsing (`gzip ;q=1`, `gzip; q=0.5` and `*` do
not count); a repeated header counts once, the first time. (generate's own rules are in
test_generate.py.)
"""

from __future__ import annotations

import gzip
import http.client
import json
import zlib

import pytest

HOST = "127.0.0.1"
PATH = "/v2/models/identity_fp32/infer"
BODY = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 3],
                               "data": [1, 2, 3]}]}).encode()
ANSWER = {"model_name": "identity_fp32", "model_version": "1", "outputs": [
    {"name": "OUTPUT0", "datatype": "FP32", "shape": [1, 3], "data": [1.0, 2.0, 3.0]}]}


def send(server, headers: list[tuple[str, str]], body: bytes = BODY,
         ) -> tuple[int, dict[str, str], bytes]:
    """POST with exactly these headers (repeats kept, no Accept-Encoding added)."""
    conn = http.client.HTTPConnection(HOST, server.http_port, timeout=30)
    try:
        conn.putrequest("POST", PATH, skip_accept_encoding=True)
        for key, value in headers:
            conn.putheader(key, value)
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        return (response.status, {k.lower(): v for k, v in response.getheaders()},
                response.read())
    finally:
        conn.close()


def still_serving(server) -> None:
    status, _, body = send(server, [])
    assert (status, json.loads(body)) == (200, ANSWER)


@pytest.mark.parametrize("headers", [
    [("Content-Encoding", "br")],
    [("Content-Encoding", "gzip, deflate")],
    [("Content-Encoding", "GZIP")],
    [("Content-Encoding", "x-gzip")],
    [("Content-Encoding", "")],
    [("Content-Encoding", "br"), ("Content-Encoding", "identity")],
    [("Accept-Encoding", "gzip"), ("Content-Encoding", "compress")],
], ids=["br", "list", "uppercase", "x-gzip", "empty", "first-of-two", "with-accept"])
def test_unknown_request_coding_is_refused_as_triton(server, headers):
    status, reply_headers, body = send(server, headers)
    assert status == 501
    assert reply_headers["content-type"] == "text/plain"
    assert reply_headers["accept-encoding"] == "gzip, deflate"
    assert "content-encoding" not in reply_headers
    assert json.loads(body) == {"error": "Unsupported compression type"}
    still_serving(server)


@pytest.mark.parametrize("headers, body", [
    ([("Content-Encoding", "identity")], BODY),
    ([("Content-Encoding", "gzip")], gzip.compress(BODY)),
    ([("Content-Encoding", "deflate")], zlib.compress(BODY)),
    ([("Content-Encoding", "identity"), ("Content-Encoding", "br")], BODY),
    ([("Content-Encoding", "gzip"), ("Content-Encoding", "br")], gzip.compress(BODY)),
], ids=["identity", "gzip", "deflate", "identity-then-br", "gzip-then-br"])
def test_known_request_codings_are_read(server, headers, body):
    status, _, reply = send(server, headers, body)
    assert (status, json.loads(reply)) == (200, ANSWER)


@pytest.mark.parametrize("accept, coding", [
    ("gzip", "gzip"),
    ("deflate", "deflate"),
    ("br", None),
    ("br, gzip;q=0.5", "gzip"),
    ("*", None),
    ("*;q=1", None),
    ("gzip;q=0", None),
    ("identity;q=0, deflate;q=0.1", "deflate"),
    ("identity;q=0", None),
    ("GZIP", None),
    ("x-gzip", None),
    ("", None),
    ("gzip;q=abc, deflate", "deflate"),
    ("br;q=1.0, deflate;q=0.9", "deflate"),
    ("gzip,deflate", "gzip"),
    ("deflate, gzip", "deflate"),
    ("gzip;q=0.5, deflate;q=0.5", "gzip"),
    (" gzip", "gzip"),
    ("gzip ;q=1", None),
    ("gzip; q=0.5", None),
    ("gzip;q=1.5", "gzip"),
])
def test_accept_encoding_picks_the_coding_triton_picks(server, accept, coding):
    status, headers, body = send(server, [("Accept-Encoding", accept)])
    assert status == 200
    assert headers.get("content-encoding") == coding
    if coding == "gzip":
        body = gzip.decompress(body)
    elif coding == "deflate":
        body = zlib.decompress(body)
    assert json.loads(body) == ANSWER


@pytest.mark.parametrize("first, second, coding", [
    ("gzip", "br", "gzip"),
    ("br", "gzip", None),
])
def test_repeated_accept_encoding_counts_the_first(server, first, second, coding):
    status, headers, _ = send(server, [("Accept-Encoding", first), ("Accept-Encoding", second)])
    assert status == 200
    assert headers.get("content-encoding") == coding


def test_error_answers_are_not_compressed(server):
    bad = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 3],
                                  "data": ["a", "b", "c"]}]}).encode()
    status, headers, body = send(server, [("Accept-Encoding", "gzip")], bad)
    assert status == 400
    assert "content-encoding" not in headers
    assert json.loads(body) == {
        "error": "Unable to parse 'data': attempt to access JSON non-number as double"}
