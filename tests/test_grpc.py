"""The gRPC frontend, driven by the real tritonclient (sync and aio) and by raw protobuf stubs.

Most tests talk to the shared `server` process (identity models of tests/models.py). A few start
a GrpcFrontend in-process over a stand-in server object, for what the standard repository cannot
show: every typed-contents kind and datatype, readiness changes, port conflicts and graceful stop.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from typing import Any

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as aioclient
from tritonclient.grpc import model_config_pb2
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pbg
from tritonclient.utils import InferenceServerException

from tritium.errors import TritonError
from tritium.frontend.grpc import GrpcFrontend
from tritium.request import InferenceResponse
from tritium.tensor import Tensor

SERVING = b"\x08\x01"
NOT_SERVING = b"\x08\x02"


# -- helpers -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client(server) -> grpcclient.InferenceServerClient:
    with grpcclient.InferenceServerClient(server.grpc_url) as c:
        yield c


@pytest.fixture(scope="module")
def channel(server) -> grpc.Channel:
    ch = grpc.insecure_channel(
        server.grpc_url,
        options=[("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)],
    )
    yield ch
    ch.close()


@pytest.fixture(scope="module")
def stub(channel) -> pbg.GRPCInferenceServiceStub:
    return pbg.GRPCInferenceServiceStub(channel)


def tensor(name: str, datatype: str, shape: list[int], **contents: list[Any]):
    t = pb.ModelInferRequest.InferInputTensor(name=name, datatype=datatype, shape=shape)
    for field, values in contents.items():
        getattr(t.contents, field).extend(values)
    return t


def infer_request(model: str, inputs: list, raws: list[bytes] = (), version: str = "",
                  outputs: list[str] = (), id: str = "", params: dict | None = None):
    r = pb.ModelInferRequest(model_name=model, model_version=version, id=id, inputs=inputs)
    r.raw_input_contents.extend(raws)
    for name in outputs:
        r.outputs.add(name=name)
    for key, value in (params or {}).items():
        p = r.parameters[key]
        if isinstance(value, bool):
            p.bool_param = value
        elif isinstance(value, int):
            p.int64_param = value
        elif isinstance(value, float):
            p.double_param = value
        else:
            p.string_param = value
    return r


def output_array(response: pb.ModelInferResponse, name: str) -> np.ndarray:
    """Decode one output the way tritonclient does (raw_output_contents by index)."""
    for index, out in enumerate(response.outputs):
        if out.name == name:
            raw = response.raw_output_contents[index]
            if out.datatype == "BYTES":
                items, offset = [], 0
                while offset < len(raw):
                    (length,) = struct.unpack_from("<I", raw, offset)
                    items.append(raw[offset + 4 : offset + 4 + length])
                    offset += 4 + length
                return np.array(items, dtype=np.object_).reshape(tuple(out.shape))
            dtype = {"BF16": np.uint16}.get(out.datatype) or grpcclient.triton_to_np_dtype(
                out.datatype
            )
            return np.frombuffer(raw, dtype=dtype).reshape(tuple(out.shape))
    raise AssertionError(f"no output {name} in {[o.name for o in response.outputs]}")


def bytes_wire(*items: bytes) -> bytes:
    return b"".join(struct.pack("<I", len(i)) + i for i in items)


F4 = np.arange(4, dtype=np.float32).reshape(1, 4)
I16 = np.arange(16, dtype=np.int32).reshape(1, 16)


def good_fp32_request():
    return infer_request("identity_fp32", [tensor("INPUT0", "FP32", [1, 4])], [F4.tobytes()])


def assert_still_serving(stub) -> None:
    response = stub.ModelInfer(good_fp32_request())
    np.testing.assert_array_equal(output_array(response, "OUTPUT0"), F4)


# -- health and metadata -----------------------------------------------------------------------


def test_server_live_ready_and_metadata(client):
    assert client.is_server_live()
    assert client.is_server_ready()
    meta = client.get_server_metadata(as_json=True)
    assert meta["name"] == "triton"
    assert meta["version"]
    assert "binary_tensor_data" in meta["extensions"]


def test_model_ready(client):
    assert client.is_model_ready("identity_fp32")
    assert client.is_model_ready("identity_versions", "2")
    assert not client.is_model_ready("no_such_model")
    assert not client.is_model_ready("identity_fp32", "9")


@pytest.mark.parametrize("version", ["abc", "99999999999999999999"])
def test_model_ready_with_a_version_that_is_not_a_number(stub, version):
    # Past int64, std::stol fails in Triton as for text.
    with pytest.raises(grpc.RpcError) as info:
        stub.ModelReady(pb.ModelReadyRequest(name="identity_fp32", version=version))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details() == (
        f"failed to get model version from specified version string '{version}' (details: "
        "stol), version should be an integral value > 0")


def test_model_metadata(client):
    meta = client.get_model_metadata("identity_fp32", as_json=True)
    assert meta["name"] == "identity_fp32"
    assert meta["versions"] == ["1"]
    assert meta["inputs"] == [{"name": "INPUT0", "datatype": "FP32", "shape": ["-1", "-1"]}]
    assert meta["outputs"] == [{"name": "OUTPUT0", "datatype": "FP32", "shape": ["-1", "-1"]}]
    nobatch = client.get_model_metadata("identity_nobatch", as_json=True)
    assert nobatch["inputs"][0]["shape"] == ["2", "3"]
    versions = client.get_model_metadata("identity_versions", as_json=True)
    assert versions["versions"] == ["1", "2", "3"]


def test_model_config(client):
    config = client.get_model_config("identity_int32", as_json=True)["config"]
    assert config["name"] == "identity_int32"
    assert config["max_batch_size"] == 8
    assert [i["name"] for i in config["input"]] == ["INPUT0", "INPUT1"]
    assert config["input"][0]["data_type"] == "TYPE_INT32"
    assert config["input"][0]["dims"] == ["16"]
    typed = client.get_model_config("identity_fp32")
    assert typed.config.input[0].name == "INPUT0"


@pytest.mark.parametrize("call", ["get_model_metadata", "get_model_config"])
def test_metadata_and_config_of_unknown_model_or_version(client, call):
    with pytest.raises(InferenceServerException) as info:
        getattr(client, call)("no_such_model")
    assert info.value.status() == "StatusCode.NOT_FOUND"
    assert "Request for unknown model: 'no_such_model' is not found" in info.value.message()
    with pytest.raises(InferenceServerException) as info:
        getattr(client, call)("identity_fp32", "9")
    assert info.value.status() == "StatusCode.NOT_FOUND"
    assert "'identity_fp32' version 9 is not found" in info.value.message()


def test_health_check_answers_serving(channel):
    check = channel.unary_unary(
        "/grpc.health.v1.Health/Check",
        request_serializer=lambda b: b,
        response_deserializer=lambda b: b,
    )
    assert check(b"") == SERVING
    service = b"inference.GRPCInferenceService"
    assert check(b"\x0a" + bytes([len(service)]) + service) == SERVING


def test_read_only_extension_rpcs_answer(stub):
    """Every read-only extension RPC answers on a default server (none is UNIMPLEMENTED)."""
    statistics = stub.ModelStatistics(pb.ModelStatisticsRequest())
    assert "identity_fp32" in {m.name for m in statistics.model_stats}
    index = stub.RepositoryIndex(pb.RepositoryIndexRequest())
    assert "identity_fp32" in {m.name for m in index.models}
    assert stub.SystemSharedMemoryStatus(pb.SystemSharedMemoryStatusRequest()).regions == {}
    assert stub.CudaSharedMemoryStatus(pb.CudaSharedMemoryStatusRequest()).regions == {}
    assert stub.TraceSetting(pb.TraceSettingRequest()).settings["trace_level"].value == ["OFF"]
    assert "log_verbose_level" in stub.LogSettings(pb.LogSettingsRequest()).settings


def test_classification_over_grpc_is_refused_not_ignored(client):
    # Only HTTP classifies; raw values under a classification request would look like an answer.
    data = np.random.rand(1, 5).astype(np.float32)
    inp = grpcclient.InferInput("INPUT0", data.shape, "FP32")
    inp.set_data_from_numpy(data)
    with pytest.raises(InferenceServerException) as info:
        client.infer("identity_fp32", [inp],
                     outputs=[grpcclient.InferRequestedOutput("OUTPUT0", class_count=2)])
    assert info.value.status() == "StatusCode.UNIMPLEMENTED"
    assert info.value.message() == (
        "classification of output 'OUTPUT0' is supported over HTTP only")


# -- inference ---------------------------------------------------------------------------------


def test_infer_fp32(client):
    data = np.random.rand(3, 5).astype(np.float32)
    inp = grpcclient.InferInput("INPUT0", data.shape, "FP32")
    inp.set_data_from_numpy(data)
    result = client.infer("identity_fp32", [inp])
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)
    response = result.get_response()
    assert response.model_name == "identity_fp32"
    assert response.model_version == "1"


def test_infer_int32_two_inputs(client):
    a = np.arange(32, dtype=np.int32).reshape(2, 16)
    b = -a
    inputs = [grpcclient.InferInput("INPUT0", a.shape, "INT32"),
              grpcclient.InferInput("INPUT1", b.shape, "INT32")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    result = client.infer("identity_int32", inputs)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), b)


def test_infer_bytes(client):
    data = np.array([[b"hello", b"", "héllo".encode(), b"\x00\xff"]], dtype=np.object_)
    inp = grpcclient.InferInput("INPUT0", data.shape, "BYTES")
    inp.set_data_from_numpy(data)
    result = client.infer("identity_bytes", [inp])
    out = result.as_numpy("OUTPUT0")
    assert out.shape == (1, 4)
    assert out.tolist() == data.tolist()


def test_infer_no_batch_model(client):
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    inp = grpcclient.InferInput("INPUT0", data.shape, "FP32")
    inp.set_data_from_numpy(data)
    result = client.infer("identity_nobatch", [inp])
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)


def test_infer_with_the_aio_client(server):
    async def run() -> None:
        async with aioclient.InferenceServerClient(server.grpc_url) as c:
            assert await c.is_server_ready()
            data = np.arange(8, dtype=np.float32).reshape(2, 4)
            inp = aioclient.InferInput("INPUT0", data.shape, "FP32")
            inp.set_data_from_numpy(data)
            results = await asyncio.gather(*(c.infer("identity_fp32", [inp]) for _ in range(20)))
            for result in results:
                np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)

    asyncio.run(run())


def test_many_concurrent_requests_all_succeed(server):
    """More calls at once than gRPC's default pending-call limit (1000) lets a server queue."""
    request = good_fp32_request()

    async def run() -> list[Any]:
        async with grpc.aio.insecure_channel(server.grpc_url) as ch:
            s = pbg.GRPCInferenceServiceStub(ch)
            return await asyncio.gather(
                *(s.ModelInfer(request) for _ in range(1500)), return_exceptions=True
            )

    results = asyncio.run(run())
    errors = [r for r in results if isinstance(r, Exception)]
    assert not errors, errors[0]


def test_typed_contents(stub):
    response = stub.ModelInfer(infer_request(
        "identity_fp32", [tensor("INPUT0", "FP32", [1, 3], fp32_contents=[1.5, -2, 3])]
    ))
    np.testing.assert_array_equal(output_array(response, "OUTPUT0"), [[1.5, -2, 3]])
    # Outputs always come back as raw contents, as Triton sends them.
    assert len(response.raw_output_contents) == 1
    assert not response.outputs[0].HasField("contents")

    response = stub.ModelInfer(infer_request("identity_int32", [
        tensor("INPUT0", "INT32", [1, 16], int_contents=list(range(16))),
        tensor("INPUT1", "INT32", [1, 16], int_contents=list(range(-16, 0))),
    ]))
    np.testing.assert_array_equal(output_array(response, "OUTPUT0"), I16)
    np.testing.assert_array_equal(output_array(response, "OUTPUT1"), I16 - 16)

    response = stub.ModelInfer(infer_request(
        "identity_bytes", [tensor("INPUT0", "BYTES", [1, 3], bytes_contents=[b"a", b"", b"xyz"])]
    ))
    assert output_array(response, "OUTPUT0").tolist() == [[b"a", b"", b"xyz"]]

    response = stub.ModelInfer(infer_request(
        "identity_nobatch", [tensor("INPUT0", "FP32", [2, 3], fp32_contents=list(range(6)))]
    ))
    np.testing.assert_array_equal(
        output_array(response, "OUTPUT0"), np.arange(6, dtype=np.float32).reshape(2, 3)
    )


def test_requested_outputs_subset(client):
    a = np.ones((1, 16), dtype=np.int32)
    inputs = [grpcclient.InferInput("INPUT0", a.shape, "INT32"),
              grpcclient.InferInput("INPUT1", a.shape, "INT32")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(a * 7)
    result = client.infer(
        "identity_int32", inputs, outputs=[grpcclient.InferRequestedOutput("OUTPUT1")]
    )
    assert [o.name for o in result.get_response().outputs] == ["OUTPUT1"]
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a * 7)
    assert result.as_numpy("OUTPUT0") is None


def test_request_id_is_echoed(client, stub):
    inp = grpcclient.InferInput("INPUT0", [1, 4], "FP32")
    inp.set_data_from_numpy(F4)
    result = client.infer("identity_fp32", [inp], request_id="my-request-42")
    assert result.get_response().id == "my-request-42"
    assert stub.ModelInfer(good_fp32_request()).id == ""


def test_model_versions(client):
    inp = grpcclient.InferInput("INPUT0", [1, 4], "FP32")
    inp.set_data_from_numpy(F4)
    assert client.infer("identity_versions", [inp]).get_response().model_version == "3"
    for version in ("1", "2", "3"):
        result = client.infer("identity_versions", [inp], model_version=version)
        assert result.get_response().model_version == version
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), F4)


def test_request_parameters_are_accepted(client):
    inp = grpcclient.InferInput("INPUT0", [1, 4], "FP32")
    inp.set_data_from_numpy(F4)
    result = client.infer("identity_fp32", [inp], priority=1, timeout=10_000_000,
                          parameters={"custom": "value", "flag": True, "n": 3})
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), F4)


def test_large_tensor_beyond_grpc_default_message_size(client):
    """Triton accepts and returns messages up to 2 GB; gRPC's default limit is 4 MB."""
    data = np.random.rand(2, 1_500_000).astype(np.float32)  # 12 MB each way
    inp = grpcclient.InferInput("INPUT0", data.shape, "FP32")
    inp.set_data_from_numpy(data)
    result = client.infer("identity_fp32", [inp])
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)


def test_large_request_with_two_inputs_and_a_subset_of_outputs(stub):
    a = np.arange(8 * 16, dtype=np.int32).reshape(8, 16)
    b = np.zeros((8, 16), dtype=np.int32)
    big = np.random.rand(1, 100_000).astype(np.float32)
    response = stub.ModelInfer(infer_request(
        "identity_int32",
        [tensor("INPUT0", "INT32", [8, 16]), tensor("INPUT1", "INT32", [8, 16])],
        [a.tobytes(), b.tobytes()], outputs=["OUTPUT0"], id="big",
    ))
    np.testing.assert_array_equal(output_array(response, "OUTPUT0"), a)
    assert [o.name for o in response.outputs] == ["OUTPUT0"]
    response = stub.ModelInfer(infer_request(
        "identity_fp32", [tensor("INPUT0", "FP32", [1, 100_000])], [big.tobytes()], id="x" * 300
    ))
    assert response.id == "x" * 300
    np.testing.assert_array_equal(output_array(response, "OUTPUT0"), big)


# -- bad requests: Triton's status code and message; the server keeps serving ------------------

NOT_FOUND = grpc.StatusCode.NOT_FOUND
INVALID = grpc.StatusCode.INVALID_ARGUMENT


def _f4_input(datatype: str = "FP32", shape: list[int] = (1, 4)):
    return tensor("INPUT0", datatype, list(shape))


BAD_REQUESTS = {
    "unknown model": (
        infer_request("no_such_model", [_f4_input()], [F4.tobytes()]),
        NOT_FOUND, "Request for unknown model: 'no_such_model' is not found",
    ),
    "unknown model wins over bad data": (
        infer_request("no_such_model", [_f4_input("FOO")], [b"123"]),
        NOT_FOUND, "Request for unknown model: 'no_such_model' is not found",
    ),
    "unknown version": (
        infer_request("identity_fp32", [_f4_input()], [F4.tobytes()], version="7"),
        NOT_FOUND, "Request for unknown model: 'identity_fp32' version 7 is not found",
    ),
    "version not a number": (
        infer_request("identity_fp32", [_f4_input()], [F4.tobytes()], version="abc"),
        INVALID, "failed to get model version from specified version string 'abc'",
    ),
    "negative version": (
        infer_request("identity_fp32", [_f4_input()], [F4.tobytes()], version="-1"),
        INVALID, "invalid model version specified '-1'",
    ),
    "missing input": (
        infer_request("identity_int32", [tensor("INPUT0", "INT32", [1, 16])], [I16.tobytes()]),
        INVALID, "missing required input(s) ['INPUT1']",
    ),
    "wrong datatype": (
        infer_request("identity_fp32", [_f4_input("INT32")], [F4.tobytes()]),
        INVALID, "inference input 'INPUT0' data-type is 'INT32', but model 'identity_fp32' "
                 "expects 'FP32'",
    ),
    "wrong shape": (
        infer_request("identity_int32",
                      [tensor("INPUT0", "INT32", [1, 8]), tensor("INPUT1", "INT32", [1, 8])],
                      [I16.tobytes()[:32], I16.tobytes()[:32]]),
        INVALID, "unexpected shape for input",
    ),
    "raw size does not match the shape": (
        infer_request("identity_fp32", [_f4_input()], [F4.tobytes()[:12]]),
        INVALID, "input byte size mismatch for input 'INPUT0' for model 'identity_fp32'. "
                 "Expected 16, got 12",
    ),
    "fewer raw contents than inputs": (
        infer_request("identity_int32",
                      [tensor("INPUT0", "INT32", [1, 16]), tensor("INPUT1", "INT32", [1, 16])],
                      [I16.tobytes()]),
        INVALID, "unable to find data for input tensor 'INPUT1' for model 'identity_int32' "
                 "in request.",
    ),
    "more raw contents than inputs": (
        infer_request("identity_fp32", [_f4_input()], [F4.tobytes(), F4.tobytes()]),
        INVALID, "raw_input_contents must hold one entry per input",
    ),
    "no data at all": (
        infer_request("identity_fp32", [_f4_input()]),
        INVALID, "unable to find data for input tensor 'INPUT0' for model 'identity_fp32'",
    ),
    "contents and raw contents": (
        infer_request("identity_fp32",
                      [tensor("INPUT0", "FP32", [1, 4], fp32_contents=[1, 2, 3, 4])],
                      [F4.tobytes()]),
        INVALID, "contents field must not be specified when using raw_input_contents for "
                 "'INPUT0' for model 'identity_fp32'",
    ),
    "unknown datatype": (
        infer_request("identity_fp32", [_f4_input("FOO")], [F4.tobytes()]),
        INVALID, "invalid datatype 'FOO' for input 'INPUT0'",
    ),
    "FP16 typed contents are not possible": (
        infer_request("identity_fp32",
                      [tensor("INPUT0", "FP16", [1, 2], fp32_contents=[1, 2])]),
        INVALID, "of type 'FP32', expected datatype 'FP16'",
    ),
    "contents element count": (
        infer_request("identity_fp32",
                      [tensor("INPUT0", "FP32", [1, 4], fp32_contents=[1, 2, 3])]),
        INVALID, "input byte size mismatch for input 'INPUT0' for model 'identity_fp32'. "
                 "Expected 16, got 12",
    ),
    "contents of the wrong type": (
        infer_request("identity_fp32",
                      [tensor("INPUT0", "FP32", [1, 4], int_contents=[1, 2, 3, 4])]),
        INVALID, "unexpected explicit tensor data for input tensor 'INPUT0' for model "
                 "'identity_fp32' of type 'INT32', expected datatype 'FP32'",
    ),
    "BYTES contents element count": (
        infer_request("identity_bytes",
                      [tensor("INPUT0", "BYTES", [1, 3], bytes_contents=[b"a", b"b"])]),
        INVALID, "expected 3 string elements for inference input 'INPUT0' for model "
                 "'identity_bytes', got 2",
    ),
    "BYTES length prefix beyond the data": (
        infer_request("identity_bytes", [tensor("INPUT0", "BYTES", [1, 1])],
                      [struct.pack("<I", 5) + b"ab"]),
        INVALID, "incomplete string data for inference input 'INPUT0', expecting string of "
                 "length 5 but only 2 bytes available",
    ),
    "BYTES length prefix beyond the data, elements short": (
        # Triton's core counts the truncated element, then finds too few.
        infer_request("identity_bytes", [tensor("INPUT0", "BYTES", [1, 2])],
                      [struct.pack("<I", 5) + b"ab"]),
        INVALID, "expected 2 string elements for inference input 'INPUT0' for model "
                 "'identity_bytes', got 1",
    ),
    "BYTES fewer elements than the shape": (
        infer_request("identity_bytes", [tensor("INPUT0", "BYTES", [1, 2])], [bytes_wire(b"ab")]),
        INVALID, "expected 2 string elements for inference input 'INPUT0' for model "
                 "'identity_bytes', got 1",
    ),
    "BYTES more elements than the shape": (
        infer_request("identity_bytes", [tensor("INPUT0", "BYTES", [1, 1])],
                      [bytes_wire(b"ab", b"c")]),
        INVALID, "unexpected number of string elements 2 for inference input 'INPUT0' for "
                 "model 'identity_bytes', expecting 1",
    ),
    "BYTES trailing partial length": (
        infer_request("identity_bytes", [tensor("INPUT0", "BYTES", [1, 1])],
                      [bytes_wire(b"ab") + b"\x01\x00"]),
        INVALID, "incomplete string length indicator for inference input 'INPUT0' for model "
                 "'identity_bytes', expecting 4 bytes but only 2 bytes available",
    ),
    "negative dimension": (
        infer_request("identity_fp32", [_f4_input(shape=[1, -4])], [F4.tobytes()]),
        INVALID, "invalid shape [1,-4] for input 'INPUT0' of model 'identity_fp32'",
    ),
    "huge dimension": (
        infer_request("identity_fp32", [_f4_input(shape=[1, 2**40])], [F4.tobytes()]),
        INVALID, "Expected 4398046511104, got 16",
    ),
    "huge BYTES dimension": (
        infer_request("identity_bytes", [tensor("INPUT0", "BYTES", [2**31, 2**31])],
                      [bytes_wire(b"a")]),
        INVALID, "expected 4611686018427387904 string elements",
    ),
    "dimensions whose product overflows int64": (
        infer_request("identity_fp32", [_f4_input(shape=[2**62, 2**62])], [F4.tobytes()]),
        INVALID, "input byte size mismatch",
    ),
    "duplicate input": (
        infer_request("identity_fp32", [_f4_input(), _f4_input()], [F4.tobytes()] * 2),
        INVALID, "input 'INPUT0' already exists in request",
    ),
    "unknown output": (
        infer_request("identity_fp32", [_f4_input()], [F4.tobytes()], outputs=["NOPE"]),
        INVALID, "unexpected inference output 'NOPE' for model 'identity_fp32'",
    ),
    "sequence_id of the wrong type": (
        infer_request("identity_fp32", [_f4_input()], [F4.tobytes()],
                      params={"sequence_id": True}),
        INVALID, "invalid value type for 'sequence_id' parameter, expected int64_param or "
                 "string_param.",
    ),
    "negative priority": (
        infer_request("identity_fp32", [_f4_input()], [F4.tobytes()], params={"priority": -1}),
        INVALID, "invalid value for 'priority', expected value >= 0.",
    ),
    "reserved parameter name": (
        infer_request("identity_fp32", [_f4_input()], [F4.tobytes()], params={"triton_x": 1}),
        INVALID, "parameter keys starting with 'triton_' are reserved for Triton usage.",
    ),
    "double parameter": (
        infer_request("identity_fp32", [_f4_input()], [F4.tobytes()], params={"x": 1.5}),
        INVALID, "invalid value type for 'x' parameter, expected int64_param, bool_param, or "
                 "string_param.",
    ),
}


@pytest.mark.parametrize("case", list(BAD_REQUESTS))
def test_bad_request(stub, case):
    request, code, message = BAD_REQUESTS[case]
    with pytest.raises(grpc.RpcError) as info:
        stub.ModelInfer(request)
    assert info.value.code() == code, info.value.details()
    assert message in info.value.details()
    assert_still_serving(stub)


def test_unregistered_shared_memory_region(stub):
    request = infer_request("identity_fp32", [_f4_input()])
    request.inputs[0].parameters["shared_memory_region"].string_param = "region0"
    request.inputs[0].parameters["shared_memory_byte_size"].int64_param = 16
    with pytest.raises(grpc.RpcError) as info:
        stub.ModelInfer(request)
    assert info.value.code() == NOT_FOUND
    assert info.value.details() == "Unable to find shared memory region: 'region0'"
    assert_still_serving(stub)


@pytest.mark.parametrize("payload", [b"\xff" * 10, b"\x0a\x05ab",
                                     b"\x3a\xff\xff\xff\xff\x0f" + b"x" * 60_000])
def test_message_that_does_not_parse(channel, stub, payload):
    call = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer",
                               request_serializer=lambda b: b, response_deserializer=lambda b: b)
    with pytest.raises(grpc.RpcError) as info:
        call(payload)
    assert info.value.code() == grpc.StatusCode.INTERNAL
    assert info.value.details() == "Unable to parse request"
    assert_still_serving(stub)


def test_tritonclient_sees_status_and_message(client):
    inp = grpcclient.InferInput("INPUT0", [1, 4], "FP32")
    inp.set_data_from_numpy(F4)
    with pytest.raises(InferenceServerException) as info:
        client.infer("no_such_model", [inp])
    assert info.value.status() == "StatusCode.NOT_FOUND"
    assert info.value.message() == "Request for unknown model: 'no_such_model' is not found"
    wrong = grpcclient.InferInput("INPUT0", [1, 4], "INT32")
    wrong.set_data_from_numpy(F4.astype(np.int32))
    with pytest.raises(InferenceServerException) as info:
        client.infer("identity_fp32", [wrong], request_id="r1")
    assert info.value.status() == "StatusCode.INVALID_ARGUMENT"
    assert info.value.message().startswith("[request id: r1] inference input 'INPUT0' data-type")


# -- in-process: a GrpcFrontend over a stand-in server -----------------------------------------


class EchoServer:
    """Stands in for InferenceServer: OUTPUTn = INPUTn of any datatype, no validation."""

    def __init__(self) -> None:
        self.ready = True
        self.release: asyncio.Event | None = None
        self.started = 0
        self.requests: list[Any] = []
        from tritium.shared_memory import SharedMemoryManager

        self.shared_memory = SharedMemoryManager(enabled=False)

    def is_live(self) -> bool:
        return True

    def is_ready(self) -> bool:
        return self.ready

    def metadata(self) -> dict[str, Any]:
        return {"name": "echo", "version": "0", "extensions": []}

    def model_ready(self, name: str, version: str = "") -> bool:
        return name == "echo"

    def model_config(self, name: str, version: str = "") -> Any:
        if name not in ("echo", "echo_decoupled"):
            raise TritonError.not_found(f"Request for unknown model: '{name}' is not found")
        config = model_config_pb2.ModelConfig(name=name)
        config.model_transaction_policy.decoupled = name == "echo_decoupled"
        return config

    def model_metadata(self, name: str, version: str = "") -> dict[str, Any]:
        self.model_config(name, version)
        return {"name": name, "versions": ["1"], "platform": "echo", "inputs": [], "outputs": []}

    async def infer(self, request: Any) -> InferenceResponse:
        self.model_config(request.model_name)
        self.requests.append(request)
        self.started += 1
        if self.release is not None:
            await self.release.wait()
        outputs = [Tensor(n.replace("INPUT", "OUTPUT"), t.datatype, t.shape, t.data)
                   for n, t in request.inputs.items()]
        return InferenceResponse(outputs=outputs, model_name=request.model_name,
                                 model_version="1", id=request.id)


def run_with_frontend(test, server: EchoServer | None = None) -> None:
    """Start a GrpcFrontend on a free port, run `await test(frontend, stub, server)`, stop."""
    server = server or EchoServer()

    async def main() -> None:
        frontend = GrpcFrontend(server, "127.0.0.1", 0)
        await frontend.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{frontend.port}") as ch:
                await test(frontend, pbg.GRPCInferenceServiceStub(ch), server, ch)
        finally:
            await frontend.stop(0)

    try:
        import uvloop  # the server runs on uvloop; grpc.aio must work there
    except ImportError:
        asyncio.run(main())
    else:
        uvloop.run(main())


TYPED_CONTENTS = [
    ("BOOL", "bool_contents", [True, False, True], np.bool_),
    ("INT8", "int_contents", [-128, 0, 127], np.int8),
    ("INT16", "int_contents", [-32768, 5, 32767], np.int16),
    ("INT32", "int_contents", [-(2**31), 0, 2**31 - 1], np.int32),
    ("INT64", "int64_contents", [-(2**63), 0, 2**63 - 1], np.int64),
    ("UINT8", "uint_contents", [0, 7, 255], np.uint8),
    ("UINT16", "uint_contents", [0, 7, 65535], np.uint16),
    ("UINT32", "uint_contents", [0, 7, 2**32 - 1], np.uint32),
    ("UINT64", "uint64_contents", [0, 7, 2**64 - 1], np.uint64),
    ("FP32", "fp32_contents", [0.5, -1.25, 3e38], np.float32),
    ("FP64", "fp64_contents", [0.5, -1.25, 1e300], np.float64),
]


def test_every_typed_contents_kind_round_trips_as_raw_output():
    async def test(frontend, stub, server, ch) -> None:
        for datatype, field, values, dtype in TYPED_CONTENTS:
            response = await stub.ModelInfer(infer_request(
                "echo", [tensor("INPUT0", datatype, [1, 3], **{field: values})]
            ))
            out = output_array(response, "OUTPUT0")
            assert response.outputs[0].datatype == datatype
            assert out.dtype == dtype, datatype
            np.testing.assert_array_equal(out, np.array([values], dtype=dtype))
            decoded = server.requests[-1].inputs["INPUT0"].data
            assert decoded.dtype == dtype and decoded.shape == (1, 3)

    run_with_frontend(test)


@pytest.mark.parametrize("datatype", ["BOOL", "INT8", "UINT16", "INT64", "FP16", "BF16", "FP64"])
def test_raw_contents_of_every_fixed_size_datatype(datatype):
    dtype = {"BF16": np.uint16}.get(datatype) or grpcclient.triton_to_np_dtype(datatype)
    data = (np.arange(6) % 2 if datatype == "BOOL" else np.arange(6)).astype(dtype).reshape(2, 3)

    async def test(frontend, stub, server, ch) -> None:
        response = await stub.ModelInfer(infer_request(
            "echo", [tensor("INPUT0", datatype, [2, 3])], [data.tobytes()], id="r"
        ))
        assert response.id == "r"
        assert list(response.outputs[0].shape) == [2, 3]
        np.testing.assert_array_equal(output_array(response, "OUTPUT0"), data)

    run_with_frontend(test)


def test_zero_sized_tensor():
    async def test(frontend, stub, server, ch) -> None:
        response = await stub.ModelInfer(infer_request(
            "echo", [tensor("INPUT0", "FP32", [0, 4])], [b""]
        ))
        assert list(response.outputs[0].shape) == [0, 4]
        assert response.raw_output_contents[0] == b""

    run_with_frontend(test)


def test_request_parameters_reach_the_request():
    async def test(frontend, stub, server, ch) -> None:
        await stub.ModelInfer(infer_request(
            "echo", [tensor("INPUT0", "FP32", [1, 4])], [F4.tobytes()],
            params={"sequence_id": 42, "sequence_start": True, "sequence_end": False,
                    "priority": 2, "timeout": 1500, "custom": "v", "flag": True, "n": -3},
        ))
        request = server.requests[-1]
        assert request.correlation_id == 42
        assert request.flags == 1  # SEQUENCE_START
        assert request.priority == 2
        assert request.timeout_us == 1500
        assert request.parameters == {"custom": "v", "flag": True, "n": -3}
        await stub.ModelInfer(infer_request(
            "echo", [tensor("INPUT0", "FP32", [1, 4])], [F4.tobytes()],
            params={"sequence_id": "corr-7", "sequence_end": True},
        ))
        assert server.requests[-1].correlation_id == "corr-7"
        assert server.requests[-1].flags == 2  # SEQUENCE_END

    run_with_frontend(test)


def test_model_infer_refuses_decoupled_models():
    async def test(frontend, stub, server, ch) -> None:
        with pytest.raises(grpc.RpcError) as info:
            await stub.ModelInfer(infer_request(
                "echo_decoupled", [tensor("INPUT0", "FP32", [1, 4])], [F4.tobytes()]
            ))
        assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED
        assert info.value.details() == (
            "ModelInfer RPC doesn't support models with decoupled transaction policy"
        )
        assert not server.requests

    run_with_frontend(test)


def test_health_follows_server_readiness():
    async def test(frontend, stub, server, ch) -> None:
        check = ch.unary_unary("/grpc.health.v1.Health/Check")
        assert await check(b"") == SERVING
        assert (await stub.ServerReady(pb.ServerReadyRequest())).ready
        server.ready = False
        assert await check(b"") == NOT_SERVING
        assert not (await stub.ServerReady(pb.ServerReadyRequest())).ready

    run_with_frontend(test)


def test_start_raises_oserror_when_the_port_is_taken():
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]

    async def main() -> None:
        frontend = GrpcFrontend(EchoServer(), "127.0.0.1", port)
        with pytest.raises(OSError, match=str(port)):
            await frontend.start()
        await frontend.stop(0)  # harmless after a failed start

    try:
        asyncio.run(main())
    finally:
        taken.close()


def test_description_names_the_bound_address():
    async def test(frontend, stub, server, ch) -> None:
        assert frontend.description == f"GRPCInferenceService at 127.0.0.1:{frontend.port}"
        assert frontend.port > 0

    run_with_frontend(test)


def test_stop_lets_in_flight_requests_finish():
    server = EchoServer()

    async def main() -> None:
        server.release = asyncio.Event()
        frontend = GrpcFrontend(server, "127.0.0.1", 0)
        await frontend.start()
        async with grpc.aio.insecure_channel(f"127.0.0.1:{frontend.port}") as ch:
            stub = pbg.GRPCInferenceServiceStub(ch)
            call = asyncio.ensure_future(stub.ModelInfer(infer_request(
                "echo", [tensor("INPUT0", "FP32", [1, 4])], [F4.tobytes()]
            )))
            while server.started == 0:
                await asyncio.sleep(0.01)
            stopping = asyncio.ensure_future(frontend.stop(30.0))
            await asyncio.sleep(0.1)
            assert not stopping.done()  # waiting for the request in flight
            server.release.set()
            response = await call
            np.testing.assert_array_equal(output_array(response, "OUTPUT0"), F4)
            await stopping
            with pytest.raises(grpc.RpcError):
                await stub.ServerLive(pb.ServerLiveRequest(), timeout=2)

    asyncio.run(main())
