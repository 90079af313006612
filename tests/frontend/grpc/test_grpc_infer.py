"""gRPC inference on the shared server, by the real tritonclient (sync and aio) and raw protobuf.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as aioclient
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pbg
from tritonclient.utils import deserialize_bytes_tensor

# `channel` is not used here by name: the `stub` fixture needs it.
from support.grpc_fixtures import (
    F4,
    I16,
    channel,  # noqa: F401
    client,  # noqa: F401
    good_fp32_request,
    infer_request,
    output_array,
    stub,  # noqa: F401
    tensor,
)

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


def _classify(stub, parameter: pb.InferParameter, shape=(2, 4)) -> pb.ModelInferResponse:
    request = pb.ModelInferRequest(model_name="identity_fp32")
    request.inputs.add(name="INPUT0", datatype="FP32", shape=list(shape))
    values = np.arange(np.prod(shape), dtype=np.float32)[::-1].copy()
    request.raw_input_contents.append(values.tobytes())
    output = request.outputs.add(name="OUTPUT0")
    output.parameters["classification"].CopyFrom(parameter)
    return stub.ModelInfer(request)


def test_classification_as_triton_sends_it(stub):
    # Rows [7 6 5 4] and [3 2 1 0]: the two largest of each, "value:index", as Triton 2.51 sent.
    response = _classify(stub, pb.InferParameter(int64_param=2))
    output = response.outputs[0]
    assert (output.name, output.datatype, list(output.shape)) == ("OUTPUT0", "BYTES", [2, 2])
    assert deserialize_bytes_tensor(response.raw_output_contents[0]).tolist() == [
        b"7.000000:0", b"6.000000:1", b"3.000000:0", b"2.000000:1"]
    # More classes than values: every value, still largest first.
    wide = _classify(stub, pb.InferParameter(int64_param=9))
    assert list(wide.outputs[0].shape) == [2, 4]


def test_classification_through_the_client(client):
    data = np.array([[0.1, 0.7, 0.2]], dtype=np.float32)
    inp = grpcclient.InferInput("INPUT0", data.shape, "FP32")
    inp.set_data_from_numpy(data)
    result = client.infer("identity_fp32", [inp],
                          outputs=[grpcclient.InferRequestedOutput("OUTPUT0", class_count=2)])
    assert result.as_numpy("OUTPUT0").tolist() == [[b"0.700000:1", b"0.200000:2"]]


@pytest.mark.parametrize("parameter, message", [
    (pb.InferParameter(int64_param=0),
     "invalid value for 'classification' parameter, expected >= 0"),
    (pb.InferParameter(int64_param=-1),
     "invalid value for 'classification' parameter, expected >= 0"),
    (pb.InferParameter(string_param="2"),
     "invalid value type for 'classification' parameter, expected int64_param"),
    (pb.InferParameter(uint64_param=2),
     "invalid value type for 'classification' parameter, expected int64_param"),
])
def test_classification_parameter_errors_as_triton(stub, parameter, message):
    with pytest.raises(grpc.RpcError) as info:
        _classify(stub, parameter)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details() == message

