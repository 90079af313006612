"""Protocol details a Triton user meets, each compared with Triton 2.51 side by side: request
parameters of every accepted kind and forwarded headers reaching a Python model (also through
an ensemble), input errors worded as Triton's, reshaped outputs in their dims shape, an
unloaded model answering 404, the config JSON's members, a plain load after an override, a
generate body repeating an input, and compressed gRPC infer responses."""

from __future__ import annotations

import json
import queue
import socket
import struct
import urllib.error
import urllib.request
import zlib

import hpack
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.grpc import service_pb2 as pb
from tritonclient.utils import InferenceServerException

from support.models import write_model
from support.server_process import ServerProcess

# Answers with its inputs (OUT1 produced as [4], configured dims [2,2] with reshape [4]) and
# puts request.parameters() in the response's PARAMS output.
ECHO_MODEL = '''
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "IN0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "IN1").as_numpy()
            params = np.array([request.parameters().encode()], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUT0", a + b), pb_utils.Tensor("OUT1", a - b),
                pb_utils.Tensor("PARAMS", params)]))
        return responses
'''
ECHO_CONFIG = '''
name: "echo"
backend: "python"
max_batch_size: 8
input { name: "IN0" data_type: TYPE_FP32 dims: [ 4 ] }
input { name: "IN1" data_type: TYPE_FP32 dims: [ 4 ] }
output { name: "OUT0" data_type: TYPE_FP32 dims: [ 4 ] }
output { name: "OUT1" data_type: TYPE_FP32 dims: [ 2, 2 ] reshape { shape: [ 4 ] } }
output { name: "PARAMS" data_type: TYPE_STRING dims: [ 1 ] }
'''
ENSEMBLE_CONFIG = '''
name: "echo_ensemble"
platform: "ensemble"
max_batch_size: 8
input { name: "A" data_type: TYPE_FP32 dims: [ 4 ] }
input { name: "B" data_type: TYPE_FP32 dims: [ 4 ] }
output { name: "P" data_type: TYPE_STRING dims: [ 1 ] }
ensemble_scheduling { step [ {
  model_name: "echo" model_version: -1
  input_map { key: "IN0" value: "A" } input_map { key: "IN1" value: "B" }
  output_map { key: "PARAMS" value: "P" }
} ] }
'''
ONES = np.ones((1, 4), dtype=np.float32)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp("protocol_repo")
    write_model(repo, "echo", ECHO_CONFIG, files={"1/model.py": ECHO_MODEL})
    write_model(repo, "echo_ensemble", ENSEMBLE_CONFIG)
    with ServerProcess([repo], "--model-control-mode=explicit", "--load-model=*",
                       "--http-header-forward-pattern=(?i)^x-fwd-",
                       "--grpc-header-forward-pattern=^x-fwd-",
                       "--grpc-infer-response-compression-level=high") as process:
        yield process


def inputs(module, names=("IN0", "IN1")):
    tensors = []
    for name in names:
        tensor = module.InferInput(name, [1, 4], "FP32")
        tensor.set_data_from_numpy(ONES)
        tensors.append(tensor)
    return tensors


def params_of(result, name: str = "PARAMS") -> dict:
    return json.loads(result.as_numpy(name).reshape(-1)[0])


def test_parameters_of_every_kind_reach_the_model(server: ServerProcess) -> None:
    http = httpclient.InferenceServerClient(server.http_url)
    sent = {"s": "x", "i": 3, "b": True, "f": 1.5}
    assert params_of(http.infer("echo", inputs(httpclient), parameters=sent)) == sent
    grpc_client = grpcclient.InferenceServerClient(server.grpc_url)
    assert params_of(grpc_client.infer("echo", inputs(grpcclient), parameters=sent)) == sent


def test_forwarded_headers_become_parameters(server: ServerProcess) -> None:
    http = httpclient.InferenceServerClient(server.http_url)
    result = http.infer("echo", inputs(httpclient), parameters={"p": 1},
                        headers={"X-Fwd-Tenant": "blue", "Other": "no"})
    assert params_of(result) == {"p": 1, "X-Fwd-Tenant": "blue"}  # the name as sent
    grpc_client = grpcclient.InferenceServerClient(server.grpc_url)
    result = grpc_client.infer("echo", inputs(grpcclient), headers={"x-fwd-tenant": "green",
                                                                    "other": "no"})
    assert params_of(result) == {"x-fwd-tenant": "green"}
    # Through an ensemble, to its step.
    result = http.infer("echo_ensemble", inputs(httpclient, ("A", "B")),
                        headers={"x-fwd-trace": "t1"})
    assert params_of(result, "P") == {"x-fwd-trace": "t1"}
    # And on a stream.
    answers: queue.Queue = queue.Queue()
    grpc_client.start_stream(lambda result, error: answers.put((result, error)),
                             headers={"x-fwd-stream": "s1"})
    try:
        grpc_client.async_stream_infer("echo", inputs(grpcclient))
        result, error = answers.get(timeout=30)
    finally:
        grpc_client.stop_stream()
    assert error is None and params_of(result) == {"x-fwd-stream": "s1"}


def test_input_errors_are_worded_as_tritons(server: ServerProcess) -> None:
    http = httpclient.InferenceServerClient(server.http_url)
    with pytest.raises(InferenceServerException) as info:
        http.infer("echo", inputs(httpclient, ("INX",)))
    assert info.value.message() == (
        "[request id: <id_unknown>] expected 2 inputs but got 1 inputs for model 'echo'. "
        "Got input(s) ['INX'], but missing required input(s) ['IN0','IN1']. Please provide "
        "all required input(s).")
    with pytest.raises(InferenceServerException) as info:
        http.infer("echo", inputs(httpclient, ("IN0", "IN1", "INX")))
    assert info.value.message() == (
        "[request id: <id_unknown>] expected 2 inputs but got 3 inputs for model 'echo'. "
        "Got input(s) ['IN0','IN1','INX'], but missing required input(s) ]. Please provide "
        "all required input(s).")
    with pytest.raises(InferenceServerException) as info:
        http.infer("echo", inputs(httpclient, ("IN0", "INX")))
    assert info.value.message() == "unexpected inference input 'INX' for model 'echo'"


def test_of_several_wrong_inputs_the_one_triton_names_is_reported(
        server: ServerProcess) -> None:
    http = httpclient.InferenceServerClient(server.http_url)
    for order in (("IN0", "IN1"), ("IN1", "IN0")):
        wrong = []
        for name in order:
            tensor = httpclient.InferInput(name, [1, 4], "INT32")
            tensor.set_data_from_numpy(np.ones((1, 4), dtype=np.int32))
            wrong.append(tensor)
        with pytest.raises(InferenceServerException) as info:
            http.infer("echo", wrong)
        # Triton 2.51 reports the last input given (its unordered_map's order).
        assert info.value.message() == (
            f"[request id: <id_unknown>] inference input '{order[-1]}' data-type is 'INT32', "
            "but model 'echo' expects 'FP32'")


def test_a_reshaped_output_leaves_in_its_dims_shape(server: ServerProcess) -> None:
    http = httpclient.InferenceServerClient(server.http_url)
    result = http.infer("echo", inputs(httpclient))
    assert result.as_numpy("OUT1").shape == (1, 2, 2)
    assert result.as_numpy("OUT0").shape == (1, 4)
    grpc_client = grpcclient.InferenceServerClient(server.grpc_url)
    assert grpc_client.infer("echo", inputs(grpcclient)).as_numpy("OUT1").shape == (1, 2, 2)


def test_generate_refuses_a_repeated_input(server: ServerProcess) -> None:
    body = b'{"IN0":[1,2,3,4],"IN1":[1,2,3,4],"IN1":[1,2,3,4]}'
    request = urllib.request.Request(f"http://{server.http_url}/v2/models/echo/generate",
                                     data=body, method="POST")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request)
    assert info.value.code == 400
    assert json.loads(info.value.read()) == {
        "error": "[request id: <id_unknown>] input 'IN1' already exists in request"}


def _raw_grpc_call(port: int, path: str, message: bytes, accept: str) -> tuple[dict, bytes]:
    """One gRPC call in raw HTTP/2 frames: the response headers and its first DATA payload."""
    encoder, decoder = hpack.Encoder(), hpack.Decoder()

    def frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
        return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + \
            struct.pack(">I", stream) + payload

    block = encoder.encode([(":method", "POST"), (":scheme", "http"), (":path", path),
                            (":authority", "localhost"), ("content-type", "application/grpc"),
                            ("te", "trailers"), ("grpc-accept-encoding", accept)])
    body = struct.pack(">BI", 0, len(message)) + message
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"")
                     + frame(1, 4, 1, block) + frame(0, 1, 1, body))
        buffer, headers, data = b"", {}, b""
        while not data:
            chunk = sock.recv(65536)
            assert chunk, "connection closed"
            buffer += chunk
            while len(buffer) >= 9:
                length = int.from_bytes(buffer[:3], "big")
                if len(buffer) < 9 + length:
                    break
                kind, stream, payload = buffer[3], buffer[5:9], buffer[9:9 + length]
                buffer = buffer[9 + length:]
                if kind == 1 and int.from_bytes(stream, "big") == 1:
                    headers.update(decoder.decode(payload))
                elif kind == 0 and int.from_bytes(stream, "big") == 1:
                    data += payload
    return headers, data


@pytest.mark.parametrize("accept, algorithm", [
    ("identity,deflate,gzip", "deflate"),  # level high: the last of gzip < deflate
    ("identity,gzip", "gzip"),
    ("identity", None),
])
def test_grpc_infer_responses_are_compressed_as_the_level_says(
        server: ServerProcess, accept: str, algorithm: str | None) -> None:
    request = pb.ModelInferRequest(model_name="echo")
    for name in ("IN0", "IN1"):
        request.inputs.add(name=name, datatype="FP32", shape=[1, 4])
        request.raw_input_contents.append(ONES.tobytes())
    headers, data = _raw_grpc_call(server.grpc_port, "/inference.GRPCInferenceService/ModelInfer",
                                   request.SerializeToString(), accept)
    assert headers.get("grpc-encoding") == algorithm
    compressed, length = struct.unpack(">BI", data[:5])
    message = data[5:5 + length]
    assert compressed == (algorithm is not None)
    if algorithm == "gzip":
        message = zlib.decompress(message, 16 + zlib.MAX_WBITS)
    elif algorithm == "deflate":
        message = zlib.decompress(message)
    response = pb.ModelInferResponse.FromString(message)
    assert np.frombuffer(response.raw_output_contents[0], np.float32).tolist() == [2.0] * 4
    # tritonclient reads the compressed answers as usual.
    grpc_client = grpcclient.InferenceServerClient(server.grpc_url)
    assert grpc_client.infer("echo", inputs(grpcclient)).as_numpy("OUT0").tolist() == [[2.0] * 4]


def test_config_json_lists_2_51_members(server: ServerProcess) -> None:
    http = httpclient.InferenceServerClient(server.http_url)
    config = http.get_model_config("echo_ensemble")
    assert "max_inflight_requests" not in config["ensemble_scheduling"]
    assert config["ensemble_scheduling"]["step"][0]["model_name"] == "echo"


def test_an_unloaded_model_answers_404_and_a_plain_load_keeps_an_override(
        server: ServerProcess) -> None:
    http = httpclient.InferenceServerClient(server.http_url)
    config = http.get_model_config("echo_ensemble")
    config["max_batch_size"] = 4
    http.load_model("echo_ensemble", config=json.dumps(config))
    http.load_model("echo_ensemble")
    assert http.get_model_config("echo_ensemble")["max_batch_size"] == 4
    http.unload_model("echo_ensemble")
    for call in (lambda: http.get_model_metadata("echo_ensemble"),
                 lambda: http.infer("echo_ensemble", inputs(httpclient, ("A", "B")))):
        with pytest.raises(InferenceServerException) as info:
            call()
        assert info.value.status() == "404"
        assert "Request for unknown model: 'echo_ensemble' has no available versions" \
            in info.value.message()
    http.load_model("echo_ensemble")
    assert http.get_model_config("echo_ensemble")["max_batch_size"] == 8
