"""The HTTP/REST frontend, driven by raw HTTP and by the real tritonclient (sync and aio).

Most tests talk to the shared `server` process (identity models of tests/models.py). The expected
texts are what Triton 2.51 answers for the same requests (compared with the reference server);
where Triton answers a malformed body with 500 we answer 400. A few tests start an HttpFrontend
in-process over a stand-in server object, for port conflicts and graceful stop.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import struct
import zlib
from typing import Any

import numpy as np
import pytest
import tritonclient.http as httpclient
import tritonclient.http.aio as aioclient
from tritonclient.utils import InferenceServerException

from raw_http import Reply, call, post
from tritium.errors import TritonError
from tritium.frontend.http import HttpFrontend
from tritium.request import InferenceResponse
from tritium.tensor import Tensor

# -- helpers -----------------------------------------------------------------------------------


def f32_input(data: list, shape: list[int] | None = None, name: str = "INPUT0") -> dict:
    return {"name": name, "datatype": "FP32", "shape": shape or [1, len(data)], "data": data}


def binary_input(name: str, datatype: str, shape: list[int], size: int) -> dict:
    return {"name": name, "datatype": datatype, "shape": shape,
            "parameters": {"binary_data_size": size}}


def bytes_elements(*items: bytes) -> bytes:
    return b"".join(struct.pack("<I", len(i)) + i for i in items)


FP32 = "/v2/models/identity_fp32/infer"
INT32 = "/v2/models/identity_int32/infer"
BYTES = "/v2/models/identity_bytes/infer"
NOBATCH = "/v2/models/identity_nobatch/infer"


def assert_still_serving(server) -> None:
    reply = post(server, FP32, {"inputs": [f32_input([1, 2, 3])]})
    assert reply.status == 200, reply.body
    assert reply.json()["outputs"][0]["data"] == [1.0, 2.0, 3.0]


@pytest.fixture(scope="module")
def client(server) -> httpclient.InferenceServerClient:
    c = httpclient.InferenceServerClient(server.http_url)
    yield c
    c.close()


# -- health, metadata, configuration -------------------------------------------------------


def test_health_live_and_ready(server):
    for path in ("/v2/health/live", "/v2/health/ready"):
        reply = call(server, "GET", path)
        assert (reply.status, reply.body) == (200, b"")
        reply = call(server, "POST", path)
        assert reply.status == 405
        assert reply.error == "Method Not Allowed"


def test_health_with_tritonclient(client):
    assert client.is_server_live()
    assert client.is_server_ready()


def test_server_metadata(server, client):
    reply = call(server, "GET", "/v2")
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/json"
    document = reply.json()
    assert document["name"] == "triton"
    # Triton 2.51's list, without the shared-memory pair (off unless --allow-client-shm).
    assert document["extensions"] == [
        "classification", "sequence", "model_repository", "model_repository(unload_dependents)",
        "schedule_policy", "model_configuration", "binary_tensor_data", "parameters",
        "statistics", "trace", "logging"]
    assert client.get_server_metadata() == document


def test_model_metadata(server, client):
    reply = call(server, "GET", "/v2/models/identity_fp32")
    assert reply.status == 200
    assert reply.json() == {
        "name": "identity_fp32",
        "versions": ["1"],
        "platform": "identity",
        "inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [-1, -1]}],
        "outputs": [{"name": "OUTPUT0", "datatype": "FP32", "shape": [-1, -1]}],
    }
    nobatch = client.get_model_metadata("identity_nobatch")
    assert nobatch["inputs"] == [{"name": "INPUT0", "datatype": "FP32", "shape": [2, 3]}]
    versioned = client.get_model_metadata("identity_versions", "2")
    assert versioned["name"] == "identity_versions"
    assert "2" in versioned["versions"]


def test_model_metadata_unknown_model_and_version(server, client):
    reply = call(server, "GET", "/v2/models/nope")
    assert reply.status == 404
    assert reply.error == "Request for unknown model: 'nope' is not found"
    reply = call(server, "GET", "/v2/models/identity_versions/versions/7")
    assert reply.status == 404
    assert reply.error == "Request for unknown model: 'identity_versions' version 7 is not found"
    with pytest.raises(InferenceServerException, match="unknown model: 'nope'"):
        client.get_model_metadata("nope")


def test_model_ready(server, client):
    assert (call(server, "GET", "/v2/models/identity_fp32/ready").status) == 200
    for version in ("1", "2", "3"):
        reply = call(server, "GET", f"/v2/models/identity_versions/versions/{version}/ready")
        assert (reply.status, reply.body) == (200, b"")
    for path in ("/v2/models/identity_fp32/versions/7/ready", "/v2/models/nope/ready"):
        reply = call(server, "GET", path)
        assert reply.status == 400
        assert reply.error == "Model version not ready"
    assert client.is_model_ready("identity_versions", "2")
    assert not client.is_model_ready("nope")


def test_model_config(server, client):
    reply = call(server, "GET", "/v2/models/identity_fp32/config")
    assert reply.status == 200
    config = reply.json()
    assert config["name"] == "identity_fp32"
    assert config["backend"] == "identity"
    assert config["max_batch_size"] == 8
    assert config["input"][0]["name"] == "INPUT0"
    assert config["input"][0]["data_type"] == "TYPE_FP32"
    assert config["input"][0]["dims"] == [-1]
    assert config["output"][0]["data_type"] == "TYPE_FP32"
    assert client.get_model_config("identity_versions", "3")["name"] == "identity_versions"
    reply = call(server, "GET", "/v2/models/nope/config")
    assert reply.status == 404
    assert reply.error == "Request for unknown model: 'nope' is not found"


@pytest.mark.parametrize("method, path, status, message", [
    ("GET", "/v2/foo", 404, "Not Found"),
    ("GET", "/", 404, "Not Found"),
    ("GET", "/v2/", 404, "Not Found"),
    ("GET", "/v2/models/identity_fp32/", 404, "Not Found"),
    ("GET", "/v2/models/identity_fp32/versions/abc", 404, "Not Found"),
    ("GET", "/v2/models/identity_fp32/nonsense", 404, "Not Found"),
    ("DELETE", "/v2/models/identity_fp32", 405, "Method Not Allowed"),
    ("GET", FP32, 405, "Method Not Allowed"),
    ("POST", "/v2/models/identity_fp32/config", 405, "Method Not Allowed"),
    ("POST", "/v2", 405, "Method Not Allowed"),
])
def test_unknown_routes_and_methods(server, method, path, status, message):
    reply = call(server, method, path)
    assert reply.status == status
    assert reply.error == message


def test_query_string_is_ignored(server):
    assert call(server, "GET", "/v2/health/ready?verbose=1").status == 200


# -- inference -------------------------------------------------------------------------------


def test_infer_json_response_document(server):
    reply = post(server, FP32, {
        "id": "req-7",
        "inputs": [f32_input([[1, 2, 3], [4, 5.5, 6]], [2, 3])],
    })
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/json"
    assert "inference-header-content-length" not in reply.headers
    # Triton's document: id first, version as a string, flattened data.
    assert reply.body.startswith(b'{"id":"req-7","model_name":"identity_fp32","model_version":"1"')
    assert reply.json() == {
        "id": "req-7",
        "model_name": "identity_fp32",
        "model_version": "1",
        "outputs": [{"name": "OUTPUT0", "datatype": "FP32", "shape": [2, 3],
                     "data": [1.0, 2.0, 3.0, 4.0, 5.5, 6.0]}],
    }


def test_infer_without_id_has_no_id(server):
    reply = post(server, FP32, {"inputs": [f32_input([1, 2, 3])]})
    assert reply.status == 200
    assert "id" not in reply.json()


def test_infer_binary_input_and_binary_data_output(server):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    reply = post(server, FP32, {
        "parameters": {"binary_data_output": True},
        "inputs": [binary_input("INPUT0", "FP32", [2, 3], x.nbytes)],
    }, binary=x.tobytes())
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/octet-stream"
    output = reply.json()["outputs"][0]
    assert output == {"name": "OUTPUT0", "datatype": "FP32", "shape": [2, 3],
                      "parameters": {"binary_data_size": 24}}
    assert reply.binary() == x.tobytes()


def test_binary_data_output_applies_only_to_outputs_not_listed(server):
    # Triton: an output listed without binary_data is JSON even when the default is binary.
    reply = post(server, FP32, {
        "parameters": {"binary_data_output": True},
        "inputs": [f32_input([1, 2, 3])],
        "outputs": [{"name": "OUTPUT0"}],
    })
    assert reply.status == 200
    assert reply.json()["outputs"][0]["data"] == [1.0, 2.0, 3.0]


def test_output_binary_data_parameter(server):
    reply = post(server, FP32, {
        "inputs": [f32_input([1, 2, 3])],
        "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}],
    })
    assert reply.status == 200
    assert reply.json()["outputs"][0]["parameters"] == {"binary_data_size": 12}
    assert np.frombuffer(reply.binary(), np.float32).tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("binary_in", [True, False])
@pytest.mark.parametrize("binary_out", [True, False])
def test_tritonclient_fp32(client, binary_in, binary_out):
    x = np.random.default_rng(0).random((4, 100), dtype=np.float32)
    i = httpclient.InferInput("INPUT0", list(x.shape), "FP32")
    i.set_data_from_numpy(x, binary_data=binary_in)
    o = httpclient.InferRequestedOutput("OUTPUT0", binary_data=binary_out)
    result = client.infer("identity_fp32", [i], outputs=[o], request_id="abc")
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), x)
    assert result.get_response()["id"] == "abc"


@pytest.mark.parametrize("binary", [True, False])
def test_tritonclient_int32_two_inputs(client, binary):
    a = np.arange(32, dtype=np.int32).reshape(2, 16)
    b = -a
    inputs = []
    for name, value in (("INPUT0", a), ("INPUT1", b)):
        i = httpclient.InferInput(name, list(value.shape), "INT32")
        i.set_data_from_numpy(value, binary_data=binary)
        inputs.append(i)
    result = client.infer("identity_int32", inputs)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), b)


def test_requested_outputs_subset(client, server):
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    inputs = []
    for name in ("INPUT0", "INPUT1"):
        i = httpclient.InferInput(name, [1, 16], "INT32")
        i.set_data_from_numpy(a + (100 if name == "INPUT1" else 0))
        inputs.append(i)
    result = client.infer("identity_int32", inputs,
                          outputs=[httpclient.InferRequestedOutput("OUTPUT1")])
    assert [o["name"] for o in result.get_response()["outputs"]] == ["OUTPUT1"]
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a + 100)
    assert result.as_numpy("OUTPUT0") is None
    # A name listed twice is one output, as in Triton.
    reply = post(server, FP32, {"inputs": [f32_input([1, 2, 3])],
                                "outputs": [{"name": "OUTPUT0"}, {"name": "OUTPUT0"}]})
    assert reply.status == 200
    assert len(reply.json()["outputs"]) == 1


@pytest.mark.parametrize("binary", [True, False])
def test_tritonclient_bytes(client, binary):
    values = np.array([[b"a", "h\u00e9llo".encode(), b""]], dtype=np.object_)
    i = httpclient.InferInput("INPUT0", [1, 3], "BYTES")
    i.set_data_from_numpy(values, binary_data=binary)
    o = httpclient.InferRequestedOutput("OUTPUT0", binary_data=binary)
    result = client.infer("identity_bytes", [i], outputs=[o])
    if binary:
        assert result.as_numpy("OUTPUT0").tolist() == values.tolist()
    else:  # JSON carries strings; tritonclient hands them back as str, as with Triton
        assert result.as_numpy("OUTPUT0").tolist() == [["a", "h\u00e9llo", ""]]


def test_bytes_json_output_is_strings(server):
    reply = post(server, BYTES, {"inputs": [
        {"name": "INPUT0", "datatype": "BYTES", "shape": [1, 3], "data": [["a", "h\u00e9llo", ""]]},
    ]})
    assert reply.status == 200
    assert reply.json()["outputs"][0] == {
        "name": "OUTPUT0", "datatype": "BYTES", "shape": [1, 3], "data": ["a", "h\u00e9llo", ""],
    }


def test_bytes_binary_non_utf8_round_trip(server):
    data = bytes_elements(b"abc", b"\x00\xff\xfe")
    reply = post(server, BYTES, {
        "inputs": [binary_input("INPUT0", "BYTES", [1, 2], len(data))],
        "parameters": {"binary_data_output": True},
    }, binary=data)
    assert reply.status == 200
    assert reply.binary() == data


@pytest.mark.parametrize("binary", [True, False])
def test_tritonclient_no_batch_model(client, binary):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    i = httpclient.InferInput("INPUT0", [2, 3], "FP32")
    i.set_data_from_numpy(x, binary_data=binary)
    result = client.infer("identity_nobatch", [i])
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), x)


def test_version_routes(server, client):
    for version in ("1", "2", "3"):
        reply = post(server, f"/v2/models/identity_versions/versions/{version}/infer",
                     {"inputs": [f32_input([1, 2])]})
        assert reply.status == 200
        assert reply.json()["model_version"] == version
    reply = post(server, "/v2/models/identity_versions/infer", {"inputs": [f32_input([1, 2])]})
    assert reply.json()["model_version"] == "3"
    i = httpclient.InferInput("INPUT0", [1, 2], "FP32")
    i.set_data_from_numpy(np.ones((1, 2), np.float32))
    result = client.infer("identity_versions", [i], model_version="2")
    assert result.get_response()["model_version"] == "2"
    # Past int64 the version is not a number to Triton (std::stol), not an unknown version.
    reply = post(server, "/v2/models/identity_versions/versions/99999999999999999999/infer",
                 {"inputs": [f32_input([1, 2])]})
    assert (reply.status, reply.json()) == (400, {"error": (
        "failed to get model version from specified version string '99999999999999999999' "
        "(details: stol), version should be an integral value > 0")})


def test_request_parameters_are_accepted(server):
    reply = post(server, FP32, {
        "parameters": {"sequence_id": 0, "priority": 0, "timeout": 0, "custom": "x",
                       "count": 3, "flag": True, "ratio": 0.5},
        "inputs": [f32_input([1, 2, 3])],
    })
    assert reply.status == 200, reply.body


def test_json_special_values(server):
    raw = (b'{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,3],'
           b'"data":[NaN,Infinity,-Infinity]}]}')
    reply = post(server, FP32, raw=raw)
    assert reply.status == 200
    assert b'"data":[NaN,Infinity,-Infinity]' in reply.body


def test_zero_sized_tensor(server):
    reply = post(server, FP32, {"inputs": [f32_input([], [1, 0])]})
    assert reply.status == 200
    assert reply.json()["outputs"][0] == {"name": "OUTPUT0", "datatype": "FP32",
                                          "shape": [1, 0], "data": []}


def test_int32_json_wraps_like_triton(server):
    # Triton stores JSON integers with a C cast: 2**40 becomes 0 in an INT32 tensor.
    reply = post(server, INT32, {"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": [2 ** 40] * 16},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": list(range(16))},
    ]})
    assert reply.status == 200
    assert reply.json()["outputs"][0]["data"] == [0] * 16


def test_raw_binary_request(server):
    # Inference-Header-Content-Length: 0 -> the whole body is the single input's raw data.
    x = np.arange(6, dtype=np.float32)
    reply = post(server, FP32, raw=x.tobytes(), headers={"Inference-Header-Content-Length": "0"})
    assert reply.status == 200
    output = reply.json()["outputs"][0]
    assert output["shape"] == [1, 6]
    assert reply.binary() == x.tobytes()
    reply = post(server, NOBATCH, raw=x.tobytes(),
                 headers={"Inference-Header-Content-Length": "0"})
    assert reply.status == 200
    assert reply.json()["outputs"][0]["shape"] == [2, 3]


def test_classification(server):
    reply = post(server, FP32, {
        "inputs": [f32_input([1, 5, 3, 9, 8, 7], [2, 3])],
        "outputs": [{"name": "OUTPUT0", "parameters": {"classification": 2}}],
    })
    assert reply.status == 200
    assert reply.json()["outputs"][0] == {
        "name": "OUTPUT0", "datatype": "BYTES", "shape": [2, 2],
        "data": ["5.000000:1", "3.000000:2", "9.000000:0", "8.000000:1"],
    }
    reply = post(server, NOBATCH, {
        "inputs": [f32_input([1, 9, 3, 4, 5, 6], [2, 3])],
        "outputs": [{"name": "OUTPUT0", "parameters": {"classification": 2}}],
    })
    assert reply.json()["outputs"][0]["data"] == ["9.000000:1", "6.000000:5"]
    assert reply.json()["outputs"][0]["shape"] == [2]


@pytest.mark.parametrize("algorithm", ["gzip", "deflate"])
def test_compression(client, server, algorithm):
    x = np.random.default_rng(1).random((2, 50), dtype=np.float32)
    i = httpclient.InferInput("INPUT0", list(x.shape), "FP32")
    i.set_data_from_numpy(x)
    result = client.infer("identity_fp32", [i], request_compression_algorithm=algorithm,
                          response_compression_algorithm=algorithm)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), x)
    body = json.dumps({"inputs": [f32_input([1, 2, 3])]}).encode()
    packed = gzip.compress(body) if algorithm == "gzip" else zlib.compress(body)
    reply = post(server, FP32, raw=packed, headers={"Content-Encoding": algorithm})
    assert reply.status == 200
    assert reply.json()["outputs"][0]["data"] == [1.0, 2.0, 3.0]


def test_large_binary_tensor(client):
    x = np.random.default_rng(2).random((8, 1 << 18), dtype=np.float32)  # 8 MiB
    i = httpclient.InferInput("INPUT0", list(x.shape), "FP32")
    i.set_data_from_numpy(x)
    result = client.infer("identity_fp32", [i])
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), x)


def test_aio_client(server):
    async def main() -> None:
        async with aioclient.InferenceServerClient(server.http_url) as c:
            assert await c.is_server_ready()
            assert (await c.get_model_metadata("identity_fp32"))["name"] == "identity_fp32"
            x = np.arange(12, dtype=np.float32).reshape(3, 4)
            i = aioclient.InferInput("INPUT0", [3, 4], "FP32")
            i.set_data_from_numpy(x)
            results = await asyncio.gather(*(c.infer("identity_fp32", [i]) for _ in range(16)))
            for result in results:
                np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), x)
            with pytest.raises(InferenceServerException, match="unknown model"):
                await c.infer("nope", [i])

    asyncio.run(main())


def test_tritonclient_error_carries_status_and_message(client):
    i = httpclient.InferInput("INPUT0", [1, 3], "INT32")
    i.set_data_from_numpy(np.ones((1, 3), np.int32))
    with pytest.raises(InferenceServerException) as info:
        client.infer("identity_fp32", [i])
    assert info.value.status() == "400"
    assert "data-type is 'INT32', but model 'identity_fp32' expects 'FP32'" in info.value.message()


# -- malformed requests: a clean error naming the problem, and the server keeps serving -----

_F = np.arange(6, dtype=np.float32).tobytes()
_HEADER = json.dumps({"inputs": [binary_input("INPUT0", "FP32", [2, 3], 24)]}).encode()

BAD_REQUESTS = [
    # (id, path, kwargs for post(), status, text the error must contain)
    ("malformed-json", FP32, {"raw": b'{"inputs": ['}, 400,
     "failed to parse the request JSON buffer: Invalid value. at 12"),
    ("json-array", FP32, {"raw": b"[1, 2]"}, 400,
     "Unable to parse 'inputs': attempt to access non-existing object member 'inputs'"),
    ("trailing-garbage", FP32,
     {"raw": json.dumps({"inputs": [f32_input([1, 2, 3])]}).encode() + b"xyz"}, 400,
     "The document root must not be followed by other values"),
    ("deep-nesting", FP32, {"raw": b"[" * 100000 + b"]" * 100000}, 400,
     "failed to parse the request JSON buffer"),
    ("no-inputs", FP32, {"document": {}}, 400,
     "Unable to parse 'inputs': attempt to access non-existing object member 'inputs'"),
    ("inputs-not-array", FP32, {"document": {"inputs": {}}}, 400,
     "Unable to parse 'inputs': attempt to access JSON non-array as array"),
    ("input-not-object", FP32, {"document": {"inputs": [5]}}, 400,
     "Input must set only one of the following fields"),
    ("no-name", FP32, {"document": {"inputs": [
        {"datatype": "FP32", "shape": [1, 1], "data": [1]}]}}, 400,
     "Unable to parse 'name': attempt to access non-existing object member 'name'"),
    ("name-not-string", FP32, {"document": {"inputs": [
        {"name": 1, "datatype": "FP32", "shape": [1, 1], "data": [1]}]}}, 400,
     "Unable to parse 'name': attempt to access JSON non-string as string"),
    ("no-datatype", FP32, {"document": {"inputs": [
        {"name": "INPUT0", "shape": [1, 1], "data": [1]}]}}, 400,
     "Unable to parse 'datatype': attempt to access non-existing object member 'datatype'"),
    ("no-shape", FP32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "FP32", "data": [1]}]}}, 400,
     "Unable to parse 'shape': attempt to access non-existing object member 'shape'"),
    ("no-data", FP32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [1, 1]}]}}, 400,
     "Input must set only one of the following fields: 'data', 'binary_data_size' in "
     "'parameters', 'shared_memory_region' in 'parameters'. But no field is set"),
    ("data-and-binary", FP32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [1, 1], "data": [1],
         "parameters": {"binary_data_size": 4}}]}}, 400, "But set 'data' 'binary_data_size'"),
    ("shape-more-than-data", FP32, {"document": {"inputs": [f32_input([1, 2, 3], [1, 4])]}}, 400,
     "Unable to parse 'data': Shape does not match true shape of 'data' field"),
    ("shape-less-than-data", FP32, {"document": {"inputs": [f32_input([1, 2, 3], [1, 2])]}}, 400,
     "Unable to parse 'data': Shape does not match true shape of 'data' field"),
    ("unknown-datatype", FP32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "FP33", "shape": [1, 1], "data": [1]}]}}, 400,
     "invalid datatype for input INPUT0"),
    ("unknown-datatype-binary", FP32, {"document": {"inputs": [
        binary_input("INPUT0", "FP33", [1, 1], 4)]}, "binary": b"\x00" * 4}, 400,
     "inference input 'INPUT0' data-type is '<invalid>', but model 'identity_fp32' expects "
     "'FP32'"),
    ("wrong-datatype", FP32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 1], "data": [1]}]}}, 400,
     "[request id: <id_unknown>] inference input 'INPUT0' data-type is 'INT32', but model "
     "'identity_fp32' expects 'FP32'"),
    ("strings-for-fp32", FP32, {"document": {"inputs": [f32_input(["a", "b", "c"])]}}, 400,
     "Unable to parse 'data': attempt to access JSON non-number as double"),
    ("bool-for-fp32", FP32, {"document": {"inputs": [f32_input([True, 2, 3])]}}, 400,
     "Unable to parse 'data': attempt to access JSON non-number as double"),
    ("null-for-fp32", FP32, {"document": {"inputs": [f32_input([1, None, 3])]}}, 400,
     "Unable to parse 'data': attempt to access JSON non-number as double"),
    ("float-for-int32", INT32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": [0.5] * 16},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16}]}}, 400,
     "Unable to parse 'data': attempt to access JSON non-signed-integer as signed-integer"),
    ("number-for-bytes", BYTES, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "BYTES", "shape": [1, 2], "data": [1, 2]}]}}, 400,
     "Unable to parse JSON bytes array: attempt to access JSON non-string as string"),
    ("data-not-array", FP32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [1, 1], "data": 5}]}}, 400,
     "Unable to parse 'data': attempt to access JSON non-array as array"),
    ("fp16-as-json", FP32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "FP16", "shape": [1, 1], "data": [1]}]}}, 400,
     "receiving FP16 data via JSON is not supported. Please use the binary data format for "
     "input INPUT0"),
    ("negative-dim", FP32, {"document": {"inputs": [f32_input([1, 2, 3], [1, -3])]}}, 400,
     "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer"),
    ("float-dim", FP32, {"document": {"inputs": [f32_input([1, 2, 3], [1, 3.0])]}}, 400,
     "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer"),
    ("shape-not-array", FP32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": 3, "data": [1, 2, 3]}]}}, 400,
     "Unable to parse 'shape': attempt to access JSON non-array as array"),
    ("huge-shape-json", FP32, {"document": {"inputs": [f32_input([1, 2, 3], [1, 1 << 40])]}},
     400, "Unable to parse 'data': Shape does not match true shape of 'data' field"),
    ("huge-shape-binary", FP32, {"document": {"inputs": [
        binary_input("INPUT0", "FP32", [1, 1 << 40], 12)]}, "binary": _F[:12]}, 400,
     "input byte size mismatch for input 'INPUT0' for model 'identity_fp32'. "
     "Expected 4398046511104, got 12"),
    ("body-shorter-than-binary-size", FP32, {"document": {"inputs": [
        binary_input("INPUT0", "FP32", [2, 3], 24)]}, "binary": _F[:20]}, 400,
     "unexpected size for input 'INPUT0', expecting 4 additional bytes for model "
     "'identity_fp32'"),
    ("binary-size-not-matching-shape", FP32, {"document": {"inputs": [
        binary_input("INPUT0", "FP32", [2, 3], 20)]}, "binary": _F[:20]}, 400,
     "[request id: <id_unknown>] input byte size mismatch for input 'INPUT0' for model "
     "'identity_fp32'. Expected 24, got 20"),
    ("extra-binary-data", FP32, {"document": {"inputs": [
        binary_input("INPUT0", "FP32", [2, 3], 24)]}, "binary": _F + b"xxxx"}, 400,
     "unexpected additional input data for model 'identity_fp32'"),
    ("negative-binary-size", FP32, {"document": {"inputs": [
        binary_input("INPUT0", "FP32", [2, 3], -24)]}, "binary": _F}, 400,
     "Unable to parse 'binary_data_size': attempt to access JSON non-unsigned-integer as "
     "unsigned-integer"),
    ("header-length-beyond-body", FP32, {
        "raw": _HEADER + _F,
        "headers": {"Inference-Header-Content-Length": str(len(_HEADER) + 1000)}}, 400,
     f"inference header size should be in range (0, {len(_HEADER) + 24}), got: "
     f"{len(_HEADER) + 1000}"),
    ("negative-header-length", FP32, {
        "raw": _HEADER + _F, "headers": {"Inference-Header-Content-Length": "-5"}}, 400,
     "inference header size should be in range"),
    ("header-length-cuts-json", FP32, {
        "raw": _HEADER + _F,
        "headers": {"Inference-Header-Content-Length": str(len(_HEADER) - 3)}}, 400,
     "failed to parse the request JSON buffer"),
    ("bytes-count-short", BYTES, {"document": {"inputs": [
        binary_input("INPUT0", "BYTES", [1, 3], 12)]}, "binary": bytes_elements(b"ab", b"cd")},
     400, "expected 3 string elements for inference input 'INPUT0' for model 'identity_bytes', "
     "got 2"),
    ("bytes-count-long", BYTES, {"document": {"inputs": [
        binary_input("INPUT0", "BYTES", [1, 1], 12)]}, "binary": bytes_elements(b"ab", b"cd")},
     400, "unexpected number of string elements 2 for inference input 'INPUT0' for model "
     "'identity_bytes', expecting 1"),
    ("bytes-truncated-element", BYTES, {"document": {"inputs": [
        binary_input("INPUT0", "BYTES", [1, 1], 9)]}, "binary": struct.pack("<I", 30) + b"abcde"},
     400, "incomplete string data for inference input 'INPUT0', expecting string of length 30 "
     "but only 5 bytes available"),
    ("bytes-truncated-length", BYTES, {"document": {"inputs": [
        binary_input("INPUT0", "BYTES", [1, 1], 7)]}, "binary": bytes_elements(b"a") + b"\x01\x02"},
     400, "incomplete string length indicator for inference input 'INPUT0'"),
    ("bytes-json-count", BYTES, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "BYTES", "shape": [1, 3], "data": ["a", "b"]}]}}, 400,
     "expected 3 string elements for inference input 'INPUT0' for model 'identity_bytes', got 2"),
    ("duplicate-input", FP32, {"document": {"inputs": [f32_input([1]), f32_input([1])]}}, 400,
     "[request id: <id_unknown>] input 'INPUT0' already exists in request"),
    ("missing-input", INT32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16}]}}, 400,
     "expected 2 inputs but got 1 inputs for model 'identity_int32'"),
    ("unknown-input", FP32, {"document": {"inputs": [f32_input([1], name="INPUTX")]}}, 400,
     "unexpected inference input 'INPUTX'"),
    ("wrong-dims", INT32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 15], "data": [1] * 15},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16}]}}, 400,
     "unexpected shape for input 'INPUT0' for model 'identity_int32'. Expected [-1,16], "
     "got [1,15]"),
    ("batch-too-big", FP32, {"document": {"inputs": [f32_input([1] * 9, [9, 1])]}}, 400,
     "inference request batch-size must be <= 8 for 'identity_fp32'"),
    ("unknown-output", FP32, {"document": {"inputs": [f32_input([1])],
                                           "outputs": [{"name": "NOPE"}]}}, 400,
     "unexpected inference output 'NOPE' for model 'identity_fp32'"),
    ("outputs-not-array", FP32, {"document": {"inputs": [f32_input([1])], "outputs": {}}}, 400,
     "Unable to parse 'outputs': attempt to access JSON non-array as array"),
    ("output-binary-not-bool", FP32, {"document": {
        "inputs": [f32_input([1])],
        "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": "yes"}}]}}, 400,
     "Unable to parse 'binary_data': attempt to access JSON non-boolean as boolean"),
    ("classification-negative", FP32, {"document": {
        "inputs": [f32_input([1])],
        "outputs": [{"name": "OUTPUT0", "parameters": {"classification": -1}}]}}, 400,
     "Unable to set 'classification'"),
    ("classification-of-bytes", BYTES, {"document": {
        "inputs": [{"name": "INPUT0", "datatype": "BYTES", "shape": [1, 1], "data": ["a"]}],
        "outputs": [{"name": "OUTPUT0", "parameters": {"classification": 1}}]}}, 400,
     "class result not available for output 'OUTPUT0' due to unsupported type 'BYTES'"),
    ("id-not-string", FP32, {"document": {"id": 5, "inputs": [f32_input([1])]}}, 400,
     "Unable to parse 'id': attempt to access JSON non-string as string"),
    ("parameters-not-object", FP32, {"document": {"parameters": [1], "inputs": [f32_input([1])]}},
     400, "failed to get request params.: attempt to get members for non-object"),
    ("binary-data-output-not-bool", FP32, {"document": {
        "parameters": {"binary_data_output": 1}, "inputs": [f32_input([1])]}}, 400,
     "Unable to parse 'binary_data_output': attempt to access JSON non-boolean as boolean"),
    ("sequence-start-not-bool", FP32, {"document": {
        "parameters": {"sequence_start": 1}, "inputs": [f32_input([1])]}}, 400,
     "Unable to parse 'sequence_start': attempt to access JSON non-boolean as boolean"),
    ("negative-priority", FP32, {"document": {
        "parameters": {"priority": -1}, "inputs": [f32_input([1])]}}, 400,
     "Unable to parse 'priority'"),
    ("reserved-parameter", FP32, {"document": {
        "parameters": {"triton_x": 1}, "inputs": [f32_input([1])]}}, 400,
     "parameter keys starting with 'triton_' are reserved for Triton usage"),
    ("parameter-of-bad-type", FP32, {"document": {
        "parameters": {"x": [1]}, "inputs": [f32_input([1])]}}, 400,
     "parameter 'x' has invalid type. It should be either 'int', 'bool', or 'string'."),
    ("shared-memory-input", FP32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [1, 3],
         "parameters": {"shared_memory_region": "r", "shared_memory_byte_size": 12}}]}}, 404,
     "Unable to find shared memory region: 'r'"),
    ("raw-request-multi-input", INT32, {
        "raw": b"\x00" * 64, "headers": {"Inference-Header-Content-Length": "0"}}, 400,
     "Raw request must only have 1 input (found 1) to be deduced but got 2 inputs in "
     "'identity_int32' model configuration"),
    ("raw-request-odd-size", FP32, {
        "raw": b"\x00" * 10, "headers": {"Inference-Header-Content-Length": "0"}}, 400,
     "input byte size mismatch for input 'raw_input' for model 'identity_fp32'. "
     "Expected 8, got 10"),
    ("unsupported-content-encoding", FP32, {
        "document": {"inputs": [f32_input([1])]}, "headers": {"Content-Encoding": "br"}}, 501,
     "Unsupported compression type"),
    ("corrupt-gzip", FP32, {"raw": b"not gzip at all", "headers": {"Content-Encoding": "gzip"}},
     400, "failed to decompress the request body"),
    ("unknown-model", "/v2/models/nope/infer", {"document": {"inputs": []}}, 404,
     "Request for unknown model: 'nope' is not found"),
    ("unknown-version", "/v2/models/identity_versions/versions/9/infer",
     {"document": {"inputs": [f32_input([1])]}}, 404,
     "Request for unknown model: 'identity_versions' version 9 is not found"),
]


@pytest.mark.parametrize("path, kwargs, status, message",
                         [case[1:] for case in BAD_REQUESTS],
                         ids=[case[0] for case in BAD_REQUESTS])
def test_bad_request_gets_clean_error(server, path, kwargs, status, message):
    reply = post(server, path, **kwargs)
    assert reply.status == status, reply.body
    assert message in reply.error
    assert_still_serving(server)


def test_unsupported_content_encoding_lists_accepted_ones(server):
    reply = post(server, FP32, {"inputs": [f32_input([1])]}, headers={"Content-Encoding": "br"})
    assert reply.status == 501
    assert reply.headers["accept-encoding"] == "gzip, deflate"


def test_client_that_hangs_up_mid_body(server):
    host, port = server.http_url.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            f"POST {FP32} HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n".encode()
            + b'{"inputs": ['
        )
    assert_still_serving(server)


def test_garbage_request_line(server):
    host, port = server.http_url.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"\x00\x01\x02 not http at all\r\n\r\n")
        sock.recv(4096)  # the server answers 400 or closes; either way it stays up
    assert_still_serving(server)


# -- the frontend in-process: ports and graceful stop ---------------------------------------


class StandInServer:
    """Just enough of InferenceServer for the frontend; infer waits until released."""

    def __init__(self) -> None:
        from tritonclient.grpc import model_config_pb2 as mc

        self.config = mc.ModelConfig(name="m", max_batch_size=0)
        self.config.input.add(name="INPUT0", data_type=mc.TYPE_FP32, dims=[-1])
        self.config.output.add(name="OUTPUT0", data_type=mc.TYPE_FP32, dims=[-1])
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.ready = True
        self.tasks: set[asyncio.Task] = set()
        from tritium.shared_memory import SharedMemoryManager

        self.shared_memory = SharedMemoryManager(enabled=False)

    def is_live(self) -> bool:
        return True

    def is_ready(self) -> bool:
        return self.ready

    def model_config(self, name: str, version: str = ""):
        if name != "m":
            raise TritonError.not_found(f"Request for unknown model: '{name}' is not found")
        return self.config

    async def infer(self, request):
        self.entered.set()
        await self.release.wait()
        t = request.inputs["INPUT0"]
        return InferenceResponse(outputs=[Tensor("OUTPUT0", t.datatype, t.shape, t.data)],
                                 model_name="m", model_version="1")

    def infer_nowait(self, request, callback):
        # InferenceServer.infer_nowait: the response reaches `callback` later, on the loop.
        async def answer():
            callback(await self.infer(request))

        self.tasks.add(asyncio.get_running_loop().create_task(answer()))


async def _http(port: int, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
                 f"Connection: close\r\n\r\n".encode() + body)
    await writer.drain()
    data = await reader.read()
    writer.close()
    head, _, payload = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), payload


def test_start_on_taken_port_raises_oserror():
    async def main() -> None:
        holder = socket.socket()
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        try:
            with pytest.raises(OSError):
                await HttpFrontend(StandInServer(), "127.0.0.1", port).start()
        finally:
            holder.close()

    asyncio.run(main())


def test_start_listens_and_stop_lets_inflight_request_finish():
    async def main() -> None:
        stand_in = StandInServer()
        frontend = HttpFrontend(stand_in, "127.0.0.1", 0)
        await frontend.start()
        port = frontend.port
        assert frontend.description == f"HTTPService at 127.0.0.1:{port}"
        assert await _http(port, "GET", "/v2/health/live") == (200, b"")

        body = json.dumps({"inputs": [f32_input([1, 2], [2])]}).encode()
        inflight = asyncio.create_task(_http(port, "POST", "/v2/models/m/infer", body))
        await stand_in.entered.wait()
        stopping = asyncio.create_task(frontend.stop(grace=30))
        await asyncio.sleep(0)
        stand_in.release.set()
        status, payload = await inflight
        await stopping
        assert status == 200
        assert json.loads(payload)["outputs"][0]["data"] == [1.0, 2.0]
        with pytest.raises(OSError):
            await _http(port, "GET", "/v2/health/live")

    asyncio.run(main())


def test_not_ready_is_400_with_empty_body():
    async def main() -> None:
        stand_in = StandInServer()
        frontend = HttpFrontend(stand_in, "127.0.0.1", 0)
        await frontend.start()
        try:
            assert await _http(frontend.port, "GET", "/v2/health/ready") == (200, b"")
            stand_in.ready = False
            assert await _http(frontend.port, "GET", "/v2/health/ready") == (400, b"")
            assert await _http(frontend.port, "GET", "/v2/health/live") == (200, b"")
        finally:
            await frontend.stop(grace=1)

    asyncio.run(main())


def test_decoupled_model_is_refused():
    async def main() -> None:
        stand_in = StandInServer()
        stand_in.config.model_transaction_policy.decoupled = True
        frontend = HttpFrontend(stand_in, "127.0.0.1", 0)
        await frontend.start()
        try:
            body = json.dumps({"inputs": [f32_input([1], [1])]}).encode()
            status, payload = await _http(frontend.port, "POST", "/v2/models/m/infer", body)
            assert status == 501
            assert json.loads(payload)["error"] == (
                "HTTP end point doesn't support models with decoupled transaction policy"
            )
        finally:
            await frontend.stop(grace=1)

    asyncio.run(main())


def test_classification_with_labels_is_reported_unsupported():
    # Triton appends the label ("5.000000:1:dog"); until labels are loaded we say so plainly.
    async def main() -> None:
        stand_in = StandInServer()
        stand_in.config.output[0].label_filename = "labels.txt"
        stand_in.release.set()
        frontend = HttpFrontend(stand_in, "127.0.0.1", 0)
        await frontend.start()
        try:
            body = json.dumps({
                "inputs": [f32_input([1, 5, 3], [3])],
                "outputs": [{"name": "OUTPUT0", "parameters": {"classification": 2}}],
            }).encode()
            status, payload = await _http(frontend.port, "POST", "/v2/models/m/infer", body)
            assert status == 501
            assert "label_filename" in json.loads(payload)["error"]
        finally:
            await frontend.stop(grace=1)

    asyncio.run(main())


def test_stop_after_grace_cancels_stuck_request():
    async def main() -> None:
        stand_in = StandInServer()
        frontend = HttpFrontend(stand_in, "127.0.0.1", 0)
        await frontend.start()
        body = json.dumps({"inputs": [f32_input([1], [1])]}).encode()
        reader, writer = await asyncio.open_connection("127.0.0.1", frontend.port)
        writer.write(b"POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
                     b"\r\n%s" % (len(body), body))
        await stand_in.entered.wait()
        await frontend.stop(grace=0.2)  # returns although the request never finishes
        # ... and the stuck client is not left hanging: it gets a 500, as from an ASGI server
        # cancelling the request's task, and its connection is closed (read() reaches EOF).
        answer = await asyncio.wait_for(reader.read(), 10)
        assert answer.startswith(b"HTTP/1.1 500 Internal Server Error\r\n")
        assert b"\r\nconnection: close\r\n" in answer
        writer.close()
        for task in stand_in.tasks:
            task.cancel()

    asyncio.run(main())
