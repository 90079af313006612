"""HTTP/REST inference, by raw HTTP (JSON and the binary extension) and by tritonclient (sync, aio).

The requests go to the shared `server` process (identity models of tests/support/models.py); the
expected documents are what Triton 2.51 answers for the same requests (compared with the reference
server).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import zlib

import numpy as np
import pytest
import tritonclient.http as httpclient
import tritonclient.http.aio as aioclient
from tritonclient.utils import InferenceServerException

from support.http_infer_requests import (
    BYTES,
    FP32,
    INT32,
    NOBATCH,
    binary_input,
    bytes_elements,
    f32_input,
)
from support.raw_http import post

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
def test_tritonclient_fp32(http_client, binary_in, binary_out):
    x = np.random.default_rng(0).random((4, 100), dtype=np.float32)
    i = httpclient.InferInput("INPUT0", list(x.shape), "FP32")
    i.set_data_from_numpy(x, binary_data=binary_in)
    o = httpclient.InferRequestedOutput("OUTPUT0", binary_data=binary_out)
    result = http_client.infer("identity_fp32", [i], outputs=[o], request_id="abc")
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), x)
    assert result.get_response()["id"] == "abc"


@pytest.mark.parametrize("binary", [True, False])
def test_tritonclient_int32_two_inputs(http_client, binary):
    a = np.arange(32, dtype=np.int32).reshape(2, 16)
    b = -a
    inputs = []
    for name, value in (("INPUT0", a), ("INPUT1", b)):
        i = httpclient.InferInput(name, list(value.shape), "INT32")
        i.set_data_from_numpy(value, binary_data=binary)
        inputs.append(i)
    result = http_client.infer("identity_int32", inputs)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), b)


def test_requested_outputs_subset(http_client, server):
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    inputs = []
    for name in ("INPUT0", "INPUT1"):
        i = httpclient.InferInput(name, [1, 16], "INT32")
        i.set_data_from_numpy(a + (100 if name == "INPUT1" else 0))
        inputs.append(i)
    result = http_client.infer("identity_int32", inputs,
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
def test_tritonclient_bytes(http_client, binary):
    values = np.array([[b"a", "h\u00e9llo".encode(), b""]], dtype=np.object_)
    i = httpclient.InferInput("INPUT0", [1, 3], "BYTES")
    i.set_data_from_numpy(values, binary_data=binary)
    o = httpclient.InferRequestedOutput("OUTPUT0", binary_data=binary)
    result = http_client.infer("identity_bytes", [i], outputs=[o])
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
def test_tritonclient_no_batch_model(http_client, binary):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    i = httpclient.InferInput("INPUT0", [2, 3], "FP32")
    i.set_data_from_numpy(x, binary_data=binary)
    result = http_client.infer("identity_nobatch", [i])
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), x)


def test_version_routes(server, http_client):
    for version in ("1", "2", "3"):
        reply = post(server, f"/v2/models/identity_versions/versions/{version}/infer",
                     {"inputs": [f32_input([1, 2])]})
        assert reply.status == 200
        assert reply.json()["model_version"] == version
    reply = post(server, "/v2/models/identity_versions/infer", {"inputs": [f32_input([1, 2])]})
    assert reply.json()["model_version"] == "3"
    i = httpclient.InferInput("INPUT0", [1, 2], "FP32")
    i.set_data_from_numpy(np.ones((1, 2), np.float32))
    result = http_client.infer("identity_versions", [i], model_version="2")
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
def test_compression(http_client, server, algorithm):
    x = np.random.default_rng(1).random((2, 50), dtype=np.float32)
    i = httpclient.InferInput("INPUT0", list(x.shape), "FP32")
    i.set_data_from_numpy(x)
    result = http_client.infer("identity_fp32", [i], request_compression_algorithm=algorithm,
                          response_compression_algorithm=algorithm)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), x)
    body = json.dumps({"inputs": [f32_input([1, 2, 3])]}).encode()
    packed = gzip.compress(body) if algorithm == "gzip" else zlib.compress(body)
    reply = post(server, FP32, raw=packed, headers={"Content-Encoding": algorithm})
    assert reply.status == 200
    assert reply.json()["outputs"][0]["data"] == [1.0, 2.0, 3.0]


def test_large_binary_tensor(http_client):
    x = np.random.default_rng(2).random((8, 1 << 18), dtype=np.float32)  # 8 MiB
    i = httpclient.InferInput("INPUT0", list(x.shape), "FP32")
    i.set_data_from_numpy(x)
    result = http_client.infer("identity_fp32", [i])
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


def test_tritonclient_error_carries_status_and_message(http_client):
    i = httpclient.InferInput("INPUT0", [1, 3], "INT32")
    i.set_data_from_numpy(np.ones((1, 3), np.int32))
    with pytest.raises(InferenceServerException) as info:
        http_client.infer("identity_fp32", [i])
    assert info.value.status() == "400"
    assert "data-type is 'INT32', but model 'identity_fp32' expects 'FP32'" in info.value.message()


