"""Compressing a large answer, inflating a large compressed request and writing a large answer in
JSON do not make the server's other clients wait.

zlib at its default level takes 1-2 s for 40 MB of tensor data, and writing 4 million FP32
values as JSON 0.25 s; on the event loop, every other client waited that long. Each test holds
a big request where the server does that work (support/held_requests.py: no timing), has
another client send a small request, and checks what a user sees: the small one is answered
while nothing has come back on the big one's connection yet, then the big one gets its whole
answer (or its error in Triton's words).
"""

from __future__ import annotations

import gzip
import json
import socket
from urllib.parse import unquote

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.grpc import service_pb2 as pb

from support.h2_frames import grpc_message
from support.held_requests import GrpcCall, http_answer, http_answered, http_post
from support.models import standard_repository, write_model
from support.server_process import ServerProcess

# Answers COUNT random FP32 values (seeded by COUNT): a small request makes a big answer, and
# one that deflate takes its time over.
NOISE_CONFIG = '''
name: "noise"
backend: "python"
max_batch_size: 0
input { name: "COUNT" data_type: TYPE_INT32 dims: [ 1 ] }
output { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] }
instance_group { count: 1 kind: KIND_CPU }
'''
NOISE = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            count = int(pb_utils.get_input_tensor_by_name(request, "COUNT").as_numpy()[0])
            values = np.random.default_rng(count).random(count, dtype=np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", values)]))
        return responses
'''
BIG = 10_000_000  # 40 MB of FP32


def _noise(count: int) -> np.ndarray:
    return np.random.default_rng(count).random(count, dtype=np.float32)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo = standard_repository(tmp_path_factory.mktemp("compression_off_loop"))
    write_model(repo, "noise", NOISE_CONFIG, files={"1/model.py": NOISE})
    with ServerProcess([repo], "--grpc-infer-response-compression-level=high") as process:
        yield process


def _small_http_noise(server: ServerProcess) -> None:
    """Another client's small request to the same model, answered right."""
    client = httpclient.InferenceServerClient(server.http_url, network_timeout=120.0)
    tensor = httpclient.InferInput("COUNT", [1], "INT32")
    tensor.set_data_from_numpy(np.array([3], np.int32))
    assert np.array_equal(client.infer("noise", [tensor]).as_numpy("OUTPUT0"), _noise(3))
    client.close()


def _http_big_noise(server: ServerProcess, count: int, binary: bool, extra: str = ""
                    ) -> tuple[int, bytes, dict[str, str]]:
    """A request to `noise` for `count` values sent while another client's small one waits
    behind it in the model's queue: the small one is answered first. The big one's answer."""
    header = json.dumps({
        "inputs": [{"name": "COUNT", "shape": [1], "datatype": "INT32", "data": [count]}],
        "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": binary}}]}).encode()
    host, port = server.http_url.split(":")
    with socket.create_connection((host, int(port)), timeout=120) as big:
        big.sendall(http_post(host, int(port), "/v2/models/noise/infer", header, extra=extra))
        server.wait_pending("noise", 1)
        _small_http_noise(server)
        assert not http_answered(big), "the big answer was sent before the small one"
        status, body, answer = http_answer(big)
    return status, body, {key.lower(): value for key, value in answer.getheaders()}


def test_http_other_clients_are_answered_while_a_big_answer_is_compressed(server) -> None:
    status, body, headers = _http_big_noise(server, BIG, True, "Accept-Encoding: gzip\r\n")
    assert status == 200, body[:300]
    assert headers["content-encoding"] == "gzip"
    data = gzip.decompress(body)
    header_length = int(headers["inference-header-content-length"])
    assert json.loads(data[:header_length])["outputs"][0]["parameters"] == {
        "binary_data_size": 4 * BIG}
    assert data[header_length:] == _noise(BIG).tobytes()


def test_http_other_clients_are_answered_while_a_big_json_answer_is_written(server) -> None:
    count = 4_000_000
    status, body, _ = _http_big_noise(server, count, False)
    assert status == 200, body[:300]
    output = json.loads(body)["outputs"][0]
    assert output["shape"] == [count]
    assert np.array_equal(np.array(output["data"], np.float32), _noise(count))


def _count_request(model: str, count: int) -> pb.ModelInferRequest:
    return pb.ModelInferRequest(model_name=model, inputs=[
        pb.ModelInferRequest.InferInputTensor(name="COUNT", datatype="INT32", shape=[1])],
        raw_input_contents=[np.array([count], np.int32).tobytes()])


def test_grpc_other_clients_are_answered_while_a_big_answer_is_compressed(server) -> None:
    call = GrpcCall(server)
    try:
        call.send(_count_request("noise", BIG), ("grpc-accept-encoding", "gzip"))
        server.wait_pending("noise", 1)
        client = grpcclient.InferenceServerClient(server.grpc_url)
        tensor = grpcclient.InferInput("COUNT", [1], "INT32")
        tensor.set_data_from_numpy(np.array([3], np.int32))
        answer = client.infer("noise", [tensor], client_timeout=120).as_numpy("OUTPUT0")
        assert np.array_equal(answer, _noise(3))
        client.close()
        assert not call.answered(), "the big answer was sent before the small one"
        status, payload = call.answer()
    finally:
        call.close()
    assert (status["grpc-status"], status["grpc-encoding"]) == ("0", "gzip"), status
    assert payload[0] == 1  # the message's compressed flag
    response = pb.ModelInferResponse.FromString(gzip.decompress(payload[5:]))
    assert response.raw_output_contents[0] == _noise(BIG).tobytes()


def test_grpc_other_clients_are_answered_while_a_big_request_is_inflated(server) -> None:
    """100 MB of 4-bit noise, gzip'd (about 50 MB), for a model that does not exist: the
    answer comes right after the message is inflated and read."""
    message = pb.ModelInferRequest(model_name="no_such_model", raw_input_contents=[
        np.random.default_rng(0).integers(0, 16, 100_000_000, np.uint8).tobytes()])
    body = grpc_message(gzip.compress(message.SerializeToString(), 1), compressed=True)
    client = grpcclient.InferenceServerClient(server.grpc_url)
    data = np.arange(4, dtype=np.float32).reshape(1, 4)
    tensor = grpcclient.InferInput("INPUT0", [1, 4], "FP32")
    tensor.set_data_from_numpy(data)
    client.infer("identity_fp32", [tensor])  # connected, so that its next call is quick
    call = GrpcCall(server)
    try:
        call.send_last(call.send_holding_last_byte(message, ("grpc-encoding", "gzip"),
                                                   body=body))
        answer = client.infer("identity_fp32", [tensor], client_timeout=120)
        assert np.array_equal(answer.as_numpy("OUTPUT0"), data)
        assert not call.answered(), "the big request was answered before the small one"
        status, _ = call.answer()
    finally:
        call.close()
        client.close()
    assert status["grpc-status"] == "5", status
    assert unquote(status["grpc-message"]) == (
        "Request for unknown model: 'no_such_model' is not found")
