"""Compressing a large answer and writing a large answer in JSON do not make the server's other
clients wait.

zlib at its default level takes 1-2 s for 40 MB of tensor data, and writing 4 million FP32
values as JSON 0.25 s; on the event loop, every other client waited that long. Each test holds
a big request where the server does that work (support/held_requests.py: no timing), has
another client send a small request, and checks what a user sees: the small one is answered
while nothing has come back on the big one's connection yet, then the big one gets its whole
answer.
"""

from __future__ import annotations

import gzip
import json
import socket

import numpy as np
import pytest
import tritonclient.http as httpclient

from support.held_requests import http_answer, http_answered, http_post
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
    with ServerProcess([repo]) as process:
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
