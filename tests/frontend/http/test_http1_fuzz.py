"""A property-based fuzz of the HTTP/1.1 endpoint, over raw sockets to one live server.

Hypothesis draws whole requests: request lines (methods, every route with odd encodings,
versions), header sections (names and values of every kind, obs-fold, duplicates, every
Content-Length / Transfer-Encoding combination, chunk sizes and extensions, lying lengths) and
bodies (JSON infer documents with a wrong type at any member, nested data, huge numbers, bad
UTF-8, binary-extension tails with lying Inference-Header-Content-Length, compressed bodies,
repository, shared-memory and extension documents). Each goes to the server on its own
connection, followed by a pipelined health check that closes the connection. Whatever the
request:
- every byte that comes back is a well-formed HTTP/1.1 answer, or the server closes cleanly;
- no answer is a 5xx for the client's fault (the only 5xx allowed are those Triton gives too:
  501 for an unknown Content-Encoding, 500 for a repository document of the wrong type, 503
  for a load or unload while model control is not explicit);
- the server stays alive, logs no traceback, and a tritonclient infer afterwards succeeds.

`make test` runs a short form (about 100 requests); `make test-all` (marked slow) a long one.
"""

from __future__ import annotations

import gzip
import json
import zlib

import numpy as np
import pytest
import tritonclient.http as httpclient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.http1_wire import Exchange, exchange
from support.server_process import ServerProcess

MODELS = ["identity_fp32", "identity_int32", "identity_bytes", "identity_nobatch",
          "identity_versions", "missing", "id%2Fx", "%ff", "..%2F..", ""]
DATATYPES = ["FP32", "INT32", "BYTES", "UINT8", "INT64", "FP16", "BF16", "BOOL", "FP64",
             "UINT64", "INT8", "", "fp32", "STRING"]
# The health check behind every fuzzed request: its answer closes the connection.
SENTINEL = b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
HUGE = [2**31, 2**32, 2**53 + 1, 2**63 - 1, 2**63, 2**64, 2**64 + 1, 10**30, -(2**63) - 1]


@pytest.fixture(scope="module")
def server(standard_repo):
    """A server of its own: its log is checked for tracebacks after the fuzz."""
    with ServerProcess([standard_repo], "--http-header-timeout-secs=5") as process:
        yield process


# -- JSON values -------------------------------------------------------------------------------

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.sampled_from(HUGE),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8),
    st.sampled_from(["", "\udcff", "\u0000", "\ud800", "é" * 3]),
)
json_values = st.recursive(
    scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                     st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=6)
# A value of the wrong kind where a member is expected (cheaper to draw than `json_values`).
wrong_values = st.one_of(scalars, st.just([]), st.just({}), st.just([[1]]), st.just({"a": 1}))


def _maybe_wrong(strategy):
    """Usually `strategy`, sometimes a JSON value of another type instead."""
    return st.one_of(strategy, strategy, strategy, wrong_values)


def _nested(leaves):
    """Tensor data: a flat or nested list of leaves."""
    return st.recursive(st.lists(leaves, max_size=8),
                        lambda inner: st.lists(inner, max_size=3), max_leaves=4)


leaves = st.one_of(st.integers(-5, 300), st.sampled_from(HUGE), st.sampled_from(
    [0.5, -1e300, 1e-320, 3.4e38, 1e39]), st.booleans(), st.sampled_from(["", "a", "\udcff"]),
    st.none())
shapes = st.lists(st.one_of(st.integers(0, 20), st.sampled_from([-1, 2**40, 2**63, 1.5, "2"])),
                  max_size=4)
parameter_names = st.sampled_from(["binary_data_size", "shared_memory_region",
                                   "shared_memory_byte_size", "shared_memory_offset",
                                   "binary_data", "classification", "x"])


@st.composite
def tensor_entries(draw, output: bool = False) -> dict:
    entry: dict = {}
    if draw(st.integers(0, 9)):
        entry["name"] = draw(_maybe_wrong(st.sampled_from(["INPUT0", "INPUT1", "OUTPUT0",
                                                           "OUTPUT1", "x", ""])))
    if not output:
        if draw(st.integers(0, 9)):
            entry["datatype"] = draw(_maybe_wrong(st.sampled_from(DATATYPES)))
        if draw(st.integers(0, 9)):
            entry["shape"] = draw(_maybe_wrong(shapes))
        if draw(st.integers(0, 3)):
            entry["data"] = draw(_maybe_wrong(_nested(leaves)))
    if draw(st.booleans()):
        entry["parameters"] = draw(_maybe_wrong(st.dictionaries(
            parameter_names,
            st.one_of(st.integers(-1, 64), st.sampled_from(HUGE), st.booleans(),
                      st.text(max_size=4)), max_size=3)))
    return entry


@st.composite
def infer_documents(draw) -> object:
    document: dict = {}
    if draw(st.booleans()):
        document["id"] = draw(_maybe_wrong(st.text(max_size=8)))
    if draw(st.booleans()):
        document["parameters"] = draw(_maybe_wrong(st.dictionaries(
            st.sampled_from(["sequence_id", "sequence_start", "sequence_end", "priority",
                             "timeout", "binary_data_output", "triton_x", "custom"]),
            scalars, max_size=3)))
    if draw(st.integers(0, 9)):
        document["inputs"] = draw(_maybe_wrong(st.lists(tensor_entries(), max_size=3)))
    if draw(st.booleans()):
        document["outputs"] = draw(_maybe_wrong(st.lists(tensor_entries(output=True),
                                                         max_size=3)))
    return draw(st.one_of(st.just(document), st.just(document), st.just(document), wrong_values))


@st.composite
def infer_bodies(draw) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """A body for an infer route and the headers it goes with (binary extension, coding)."""
    text = json.dumps(draw(infer_documents()), ensure_ascii=draw(st.booleans())).encode(
        "utf-8", "surrogatepass")
    if draw(st.integers(0, 5)) == 0:  # corrupt it: bad UTF-8, cut short, NUL, raw NaN
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"", b"\x00", b"NaN",
                                                 b"[" * 3000])) + text[at:]
    headers: list[tuple[bytes, bytes]] = []
    tail = draw(st.binary(max_size=64)) if draw(st.booleans()) else b""
    if tail or draw(st.integers(0, 4)) == 0:
        length = draw(st.one_of(st.just(str(len(text))), st.sampled_from(
            ["0", "-1", "abc", "", " 5", "99999999999999999999", str(len(text) + len(tail) + 1)]),
            st.integers(0, len(text) + len(tail)).map(str)))
        headers.append((b"Inference-Header-Content-Length", length.encode()))
    body = text + tail
    coding = draw(st.sampled_from([None, None, None, "gzip", "deflate", "br", "", "gzip-lie"]))
    if coding == "gzip":
        body = gzip.compress(body)
    elif coding == "deflate":
        body = zlib.compress(body)
    if coding is not None:
        headers.append((b"Content-Encoding", b"gzip" if coding == "gzip-lie" else coding.encode()))
    if draw(st.booleans()):
        headers.append((b"Accept-Encoding", draw(st.sampled_from(
            [b"gzip", b"deflate;q=0.5, gzip;q=x", b"identity", b",,;q=", b"br"]))))
    return body, headers


# -- request lines and heads -------------------------------------------------------------------

def _infer_path(model: str, version: str | None) -> str:
    return f"/v2/models/{model}" + (f"/versions/{version}" if version is not None else "")


infer_paths = st.builds(
    lambda m, v, kind: _infer_path(m, v) + kind, st.sampled_from(MODELS),
    st.one_of(st.none(), st.sampled_from(["1", "2", "0", "99999999999999999999", "x", ""])),
    st.sampled_from(["/infer", "/infer", "/infer", ""]))
other_paths = st.one_of(
    st.builds(lambda m, kind: _infer_path(m, None) + kind, st.sampled_from(MODELS),
              st.sampled_from(["/ready", "/config", "/stats", "/trace/setting", "/generate",
                               "/generate_stream", "/infer/x", "/versions"])),
    st.sampled_from(["/v2", "/v2/health/live", "/v2/health/ready", "/v2/models/stats",
                     "/v2/repository/index", "/v2/trace/setting", "/v2/logging", "/",
                     "/v2/systemsharedmemory/status", "/v2/cudasharedmemory/status",
                     "/v2/systemsharedmemory/region/r/register",
                     "/v2/systemsharedmemory/region/r/unregister",
                     "/v2/cudasharedmemory/region/r/register",
                     "/v2/repository/models/identity_fp32/load",
                     "/v2/repository/models/missing/unload", "*", "http://x/v2", "/v2/%zz",
                     "/v2/health/live?x=%00", "/v2/models/%C0%AE%C0%AE/infer"]),
)
# Bodies for the other routes: JSON documents of the right shape with wrong members, or junk.
other_bodies = st.one_of(
    json_values.map(lambda v: json.dumps(v).encode("utf-8", "surrogatepass")),
    st.builds(lambda key, value: json.dumps({"parameters": {key: value}}).encode(
        "utf-8", "surrogatepass"),
        st.sampled_from(["config", "file:1/model.py", "unload_dependents", "x"]), scalars),
    st.builds(lambda key, value: json.dumps({key: value}).encode("utf-8", "surrogatepass"),
              st.sampled_from(["key", "offset", "byte_size", "raw_handle", "device_id",
                               "text_input", "ready", "trace_level", "log_verbose_level"]),
              scalars),
    st.binary(max_size=40),
)
methods = st.sampled_from([b"POST", b"POST", b"GET", b"HEAD", b"PUT", b"DELETE", b"OPTIONS",
                           b"PRI", b"CONNECT", b"G\x00T", b"post"])
versions = st.sampled_from([b"HTTP/1.1", b"HTTP/1.1", b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2.0",
                            b"HTTP/1.1 ", b"HTTP/9", b"HTTP/1.1\n"])
header_names = st.one_of(
    st.sampled_from([b"Host", b"Content-Type", b"Connection", b"Expect", b"Accept",
                     b"Content-Encoding", b"Inference-Header-Content-Length", b"Upgrade",
                     b"Trailer", b"X-Pad", b"triton-grpc-protocol-x"]),
    st.binary(min_size=1, max_size=8))
header_values = st.one_of(
    st.sampled_from([b"", b"close", b"keep-alive", b"100-continue", b"h2c", b"application/json",
                     b"a" * 3000, b"\xff\xfe", b"x\x00y", b"\t v \t"]),
    st.binary(max_size=16))
extra_headers = st.lists(
    st.one_of(st.tuples(header_names, header_values),
              # obs-fold: a value continued on the next line
              st.tuples(header_names, header_values.map(lambda v: v + b"\r\n  folded"))),
    max_size=4)
# How the body is framed: by length (right or lying), chunked (with odd sizes and extensions),
# both, several, or not at all.
framings = st.sampled_from(["length", "length", "length", "chunked", "chunked", "both", "none",
                            "two-lengths", "length-short", "length-long", "chunked-odd",
                            "te-gzip", "te-list", "length-junk"])


def _chunked(body: bytes, pieces: list[int], extension: bytes, odd: bool) -> bytes:
    out = b""
    at = 0
    for piece in pieces:
        chunk = body[at : at + piece]
        if not chunk:
            break
        at += len(chunk)
        size = b"%x" % len(chunk)
        if odd:
            size = b"0" * 3 + size.upper()
        out += size + extension + b"\r\n" + chunk + b"\r\n"
    if at < len(body):
        out += b"%x\r\n" % (len(body) - at) + body[at:] + b"\r\n"
    return out + b"0" + extension + b"\r\n\r\n"


@st.composite
def raw_requests(draw) -> tuple[bytes, bool]:
    """One request's bytes, and whether its method is HEAD."""
    if draw(st.booleans()):
        path = draw(infer_paths)
        body, headers = draw(infer_bodies())
    else:
        path = draw(other_paths)
        body, headers = draw(other_bodies), []
    method = draw(methods)
    if draw(st.integers(0, 7)) == 0:
        path += "/" + draw(st.text(max_size=4))
    target = path.encode("utf-8", "surrogatepass")
    head = [method + b" " + target + b" " + draw(versions)]
    headers = [(b"Host", b"x"), *headers, *draw(extra_headers)]
    if draw(st.integers(0, 5)) == 0:
        headers = headers + headers  # every header twice
    framing = draw(framings)
    pieces = draw(st.lists(st.integers(1, 40), max_size=4))
    extension = draw(st.sampled_from([b"", b";a=b", b";" + b"e" * 200, b" ;x", b";\xff"]))
    if framing in ("length", "both", "two-lengths"):
        headers.append((b"Content-Length", str(len(body)).encode()))
    if framing == "two-lengths":
        headers.append((b"Content-Length", str(len(body) + 1).encode()))
    if framing == "length-short":
        headers.append((b"Content-Length", str(max(0, len(body) - 3)).encode()))
    if framing == "length-long":
        headers.append((b"Content-Length", str(len(body) + 5).encode()))
    if framing == "length-junk":
        headers.append((b"Content-Length", draw(st.sampled_from(
            [b"-1", b"+5", b"0x10", b"1 2", b"99999999999999999999999", b""]))))
    if framing in ("chunked", "both", "chunked-odd"):
        headers.append((b"Transfer-Encoding", b"chunked"))
    if framing == "te-gzip":
        headers.append((b"Transfer-Encoding", b"gzip, chunked"))
    if framing == "te-list":
        headers.append((b"Transfer-Encoding", b"chunked"))
        headers.append((b"Transfer-Encoding", b"chunked"))
    lines = head + [name + b": " + value for name, value in headers]
    data = b"\r\n".join(lines) + b"\r\n\r\n"
    if framing in ("chunked", "both", "chunked-odd", "te-gzip", "te-list"):
        data += _chunked(body, pieces, extension, framing == "chunked-odd")
    elif framing != "none":
        data += body
    return data, method == b"HEAD"


# -- the property ------------------------------------------------------------------------------

def _client_fault_5xx(response, request: bytes) -> bool:
    """A 5xx that Triton does not give for this request too."""
    if response.status < 500:
        return False
    if response.status == 501 and b"Unsupported compression type" in response.body:
        return False  # Triton: 501 for an unknown Content-Encoding
    # Triton: 500 for repository documents of the wrong JSON type, 503 for a load or unload
    # when model control is not explicit (this server's mode).
    return not (response.status in (500, 503)
                and b" /v2/repository/" in request.split(b"\r\n", 1)[0])


def _check(server: ServerProcess, request: bytes, head: bool) -> Exchange:
    host, port = server.http_url.split(":")
    result = exchange((host, int(port)), request + SENTINEL, head_first=head)
    for response in result.responses:
        assert not _client_fault_5xx(response, request), (response, request[:600])
    assert server.process is not None and server.process.poll() is None, server.log()[-3000:]
    return result


def _server_still_serves(server: ServerProcess) -> None:
    with httpclient.InferenceServerClient(server.http_url) as client:
        data = np.arange(4, dtype=np.float32).reshape(1, 4)
        tensor = httpclient.InferInput("INPUT0", [1, 4], "FP32")
        tensor.set_data_from_numpy(data)
        result = client.infer("identity_fp32", [tensor])
        assert np.array_equal(result.as_numpy("OUTPUT0"), data)
    assert "Traceback" not in server.log(), server.log()[-5000:]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request=raw_requests())
def test_random_requests_are_answered_well_formed(server, request) -> None:
    _check(server, *request)


def test_the_server_serves_after_the_fuzz(server) -> None:
    _server_still_serves(server)


@pytest.mark.slow
@pytest.mark.timeout(3600)
@settings(max_examples=5_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request=raw_requests())
def test_random_requests_long_run(server, request) -> None:
    _check(server, *request)


@pytest.mark.slow
def test_the_server_serves_after_the_long_fuzz(server) -> None:
    _server_still_serves(server)
