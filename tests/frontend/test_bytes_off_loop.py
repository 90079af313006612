"""A BYTES tensor of millions of elements does not make the server's other clients wait.

Decoding or encoding one takes the server about half a microsecond per element (2-4 s for 4
million); on the event loop, every other client waited that long (frontend/bulk_work.py).
Each test holds a big request at the point where the server works on its tensor, has another
client send a small request, and checks what a user sees: the small one is answered while the
big one is still unanswered (nothing has come back on the big one's connection yet), then the
big one gets its full answer, or its error in Triton's words.

The points are reached without timing (support/held_requests.py).
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
from urllib.parse import unquote

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.grpc import service_pb2 as pb

from support.held_requests import (
    GrpcCall,
    http_answer,
    http_answered,
    http_post,
    unread_by_server,
    until,
)
from support.models import standard_repository, write_model
from support.server_process import ServerProcess

COUNT = 4_000_000
# Triton's words for an input holding fewer strings than its shape: found once every element
# has been read, so the big request's answer comes right after its decoding.
SHORT = ("[request id: <id_unknown>] expected {expected} string elements for inference input "
         "'INPUT0' for model 'identity_bytes', got {got}")

# Answers `COUNT` with that many 2-byte strings, so that a small request makes a big answer.
EXPAND_CONFIG = '''
name: "expand"
backend: "python"
max_batch_size: 0
input { name: "COUNT" data_type: TYPE_INT32 dims: [ 1 ] }
output { name: "OUTPUT0" data_type: TYPE_STRING dims: [ -1 ] }
instance_group { count: 1 kind: KIND_CPU }
'''
EXPAND = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            count = int(pb_utils.get_input_tensor_by_name(request, "COUNT").as_numpy()[0])
            strings = np.empty(count, dtype=np.object_)
            strings[:] = [b"%02d" % (i % 100) for i in range(count)]
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", strings)]))
        return responses
'''


def _expanded(count: int) -> bytes:
    """The wire form of what `expand` answers for `count`."""
    return b"".join(b"\x02\x00\x00\x00%02d" % (i % 100) for i in range(count))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo = standard_repository(tmp_path_factory.mktemp("bytes_off_loop"))
    write_model(repo, "expand", EXPAND_CONFIG, files={"1/model.py": EXPAND})
    with ServerProcess([repo]) as process:
        yield process


def _small_http_infer(server: ServerProcess) -> None:
    """Another client's small request (identity_fp32), answered right."""
    client = httpclient.InferenceServerClient(server.http_url, network_timeout=120.0)
    data = np.arange(4, dtype=np.float32).reshape(1, 4)
    tensor = httpclient.InferInput("INPUT0", [1, 4], "FP32")
    tensor.set_data_from_numpy(data)
    assert np.array_equal(client.infer("identity_fp32", [tensor]).as_numpy("OUTPUT0"), data)
    client.close()


def _small_grpc_infer(server: ServerProcess, model: str = "identity_fp32") -> None:
    client = grpcclient.InferenceServerClient(server.grpc_url)
    if model == "expand":
        tensor = grpcclient.InferInput("COUNT", [1], "INT32")
        tensor.set_data_from_numpy(np.array([3], np.int32))
        answer = client.infer("expand", [tensor], client_timeout=120).as_numpy("OUTPUT0")
        assert answer.tolist() == [b"00", b"01", b"02"]
    else:
        data = np.arange(4, dtype=np.float32).reshape(1, 4)
        tensor = grpcclient.InferInput("INPUT0", [1, 4], "FP32")
        tensor.set_data_from_numpy(data)
        answer = client.infer("identity_fp32", [tensor], client_timeout=120).as_numpy("OUTPUT0")
        assert np.array_equal(answer, data)
    client.close()


def test_http_other_clients_are_answered_while_a_big_bytes_request_is_decoded(server) -> None:
    """4 million strings in a binary body whose shape asks for one more: the server reads every
    element before it can answer 400. Meanwhile another client's request is answered."""
    data = b"\x02\x00\x00\x00ab" * COUNT
    header = json.dumps({"inputs": [{
        "name": "INPUT0", "shape": [1, COUNT + 1], "datatype": "BYTES",
        "parameters": {"binary_data_size": len(data)}}]}).encode()
    host, port = server.http_url.split(":")
    request = http_post(host, int(port), "/v2/models/identity_bytes/infer", header, data)
    with socket.create_connection((host, int(port)), timeout=120) as big:
        big.sendall(request[:-1])
        until(lambda: unread_by_server(int(port), big) == 0, "the server never read the body")
        big.sendall(request[-1:])
        _small_http_infer(server)
        assert not http_answered(big), "the big request was answered before the small one"
        status, body, _ = http_answer(big)
    assert status == 400, body[:300]
    assert json.loads(body) == {"error": SHORT.format(expected=COUNT + 1, got=COUNT)}


def test_http_other_clients_are_answered_while_a_big_bytes_answer_is_encoded(server) -> None:
    """A small request asks `expand` for 4 million strings; another client's small request
    waits behind it in the model's queue, and is answered while the big answer is encoded."""
    header = json.dumps({
        "inputs": [{"name": "COUNT", "shape": [1], "datatype": "INT32", "data": [COUNT]}],
        "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]}).encode()
    host, port = server.http_url.split(":")
    with socket.create_connection((host, int(port)), timeout=120) as big:
        big.sendall(http_post(host, int(port), "/v2/models/expand/infer", header))
        server.wait_pending("expand", 1)
        small = httpclient.InferenceServerClient(server.http_url, network_timeout=120.0)
        tensor = httpclient.InferInput("COUNT", [1], "INT32")
        tensor.set_data_from_numpy(np.array([3], np.int32))
        assert small.infer("expand", [tensor]).as_numpy("OUTPUT0").tolist() == [
            b"00", b"01", b"02"]
        small.close()
        assert not http_answered(big), "the big answer was sent before the small one"
        status, body, answer = http_answer(big)
    assert status == 200, body[:300]
    header_length = int(answer.getheader("Inference-Header-Content-Length"))
    assert body[header_length:] == _expanded(COUNT)


def test_grpc_other_clients_are_answered_while_a_big_bytes_request_is_decoded(server) -> None:
    data = b"\x02\x00\x00\x00ab" * COUNT
    message = pb.ModelInferRequest(model_name="identity_bytes", inputs=[
        pb.ModelInferRequest.InferInputTensor(name="INPUT0", datatype="BYTES",
                                              shape=[1, COUNT + 1])],
        raw_input_contents=[data])
    call = GrpcCall(server)
    try:
        call.send(message)
        _small_grpc_infer(server)
        assert not call.answered(), "the big request was answered before the small one"
        status, _ = call.answer()
    finally:
        call.close()
    assert status["grpc-status"] == "3", status
    assert unquote(status["grpc-message"]) == SHORT.format(expected=COUNT + 1, got=COUNT)


def test_grpc_other_clients_are_answered_while_a_big_bytes_answer_is_encoded(server) -> None:
    message = pb.ModelInferRequest(model_name="expand", inputs=[
        pb.ModelInferRequest.InferInputTensor(name="COUNT", datatype="INT32", shape=[1])],
        raw_input_contents=[np.array([COUNT], np.int32).tobytes()])
    call = GrpcCall(server)
    try:
        call.send(message)
        server.wait_pending("expand", 1)
        _small_grpc_infer(server, "expand")
        assert not call.answered(), "the big answer was sent before the small one"
        status, payload = call.answer()
    finally:
        call.close()
    assert status["grpc-status"] == "0", status
    response = pb.ModelInferResponse.FromString(payload[5:])
    assert response.raw_output_contents[0] == _expanded(COUNT)


def test_grpc_stream_answers_a_big_bytes_request_in_order(server) -> None:
    """On a ModelStreamInfer stream, a big BYTES request (decoded and encoded off the loop) and
    the small one after it are answered in order, the big one in full."""
    strings = np.array([b"%02d" % (i % 100) for i in range(COUNT)], dtype=np.object_)
    answers: list = []
    done = threading.Event()

    def collect(result, error) -> None:
        answers.append(error if error is not None else result)
        if len(answers) == 2:
            done.set()

    client = grpcclient.InferenceServerClient(server.grpc_url)
    client.start_stream(callback=collect)
    try:
        for data in (strings.reshape(1, COUNT), strings[:2].reshape(1, 2)):
            tensor = grpcclient.InferInput("INPUT0", list(data.shape), "BYTES")
            tensor.set_data_from_numpy(data)
            client.async_stream_infer("identity_bytes", [tensor])
        assert done.wait(120), answers
    finally:
        client.stop_stream()
        client.close()
    assert answers[0].as_numpy("OUTPUT0").reshape(-1).tolist() == strings.tolist()
    assert answers[1].as_numpy("OUTPUT0").reshape(-1).tolist() == [b"00", b"01"]


def test_http_json_bytes_are_decoded_and_encoded_off_the_loop_alike(server) -> None:
    """A JSON body of 20,000 strings (120 KB: decoded on the bulk thread) asking for its answer
    in JSON (encoded there too) gets the strings back, and a short one Triton's message."""
    strings = [f"s{i % 1000}" for i in range(20_000)]

    def post(shape: list[int]) -> tuple[int, dict]:
        body = json.dumps({"inputs": [{"name": "INPUT0", "shape": shape, "datatype": "BYTES",
                                       "data": strings}]}).encode()
        host, port = server.http_url.split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=120)
        try:
            connection.request("POST", "/v2/models/identity_bytes/infer", body)
            answer = connection.getresponse()
            return answer.status, json.loads(answer.read())
        finally:
            connection.close()

    status, answer = post([1, len(strings)])
    assert status == 200, answer
    assert answer["outputs"][0]["data"] == strings
    status, answer = post([1, len(strings) + 1])
    assert status == 400
    assert answer["error"].endswith(
        f"expected {len(strings) + 1} string elements for inference input 'INPUT0' for model "
        f"'identity_bytes', got {len(strings)}"), answer
