"""BLS from processes a model forks (Triton's L0_backend_python bls `test_multiprocess`): a
`multiprocessing.Pool` worker, or any `os.fork()` child of a stub, makes BLS requests, calls
and log lines of its own, and the stub's own channel keeps working beside them."""

from __future__ import annotations

import time

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.models import write_model
from support.server_process import ServerProcess

ADD_SUB = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUTPUT0", a + b), pb_utils.Tensor("OUTPUT1", a - b)]))
        return responses
"""


COUNTDOWN = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            n = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
            sender = request.get_response_sender()
            for i in range(n):
                sender.send(pb_utils.InferenceResponse(
                    [pb_utils.Tensor("OUT", np.array([i], np.int32))]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
"""


FORKER = """
import asyncio
import os
from multiprocessing import Pool

import numpy as np
import triton_python_backend_utils as pb_utils


def add_sub(size):
    a = np.random.rand(size).astype(np.float32)
    b = np.random.rand(size).astype(np.float32)
    response = pb_utils.InferenceRequest(
        model_name="add_sub", requested_output_names=["OUTPUT0", "OUTPUT1"],
        inputs=[pb_utils.Tensor("INPUT0", a), pb_utils.Tensor("INPUT1", b)]).exec()
    if response.has_error():
        return response.error().message()
    out0 = pb_utils.get_output_tensor_by_name(response, "OUTPUT0").as_numpy()
    out1 = pb_utils.get_output_tensor_by_name(response, "OUTPUT1").as_numpy()
    return bool(np.array_equal(out0, a + b) and np.array_equal(out1, a - b))


def in_a_worker(index):
    pb_utils.Logger.log_info(f"forked worker {index} says hello")
    checks = [add_sub(16), add_sub(3_000_000)]  # the second is past the stub's ring
    countdown = pb_utils.InferenceRequest(
        model_name="countdown", requested_output_names=["OUT"],
        inputs=[pb_utils.Tensor("IN", np.array([3], np.int32))]).exec(decoupled=True)
    got = [r.output_tensors()[0].as_numpy()[0] for r in countdown if r.output_tensors()]
    checks.append(got == [0, 1, 2])

    async def async_call():
        return await pb_utils.InferenceRequest(
            model_name="add_sub", requested_output_names=["OUTPUT0"],
            inputs=[pb_utils.Tensor("INPUT0", np.ones(4, np.float32)),
                    pb_utils.Tensor("INPUT1", np.ones(4, np.float32))]).async_exec()

    response = asyncio.run(async_call())
    checks.append(pb_utils.get_output_tensor_by_name(response, "OUTPUT0").as_numpy().tolist()
                  == [2.0] * 4)
    checks.append(pb_utils.is_model_ready("add_sub"))
    checks.append(pb_utils.InferenceRequest(
        model_name="missing", inputs=[], requested_output_names=[]).exec().has_error())
    return checks


def in_a_grandchild():
    pid = os.fork()
    if pid == 0:
        os._exit(0 if add_sub(8) is True else 3)
    return os.waitpid(pid, 0)[1] == 0


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            with Pool(4) as pool:
                results = pool.map(in_a_worker, range(8))
                nested = pool.apply(in_a_grandchild)
            checks = [all(r is True for r in checks) for checks in results]
            checks.append(nested)
            checks.append(add_sub(16))  # the stub's own channel, after the forks
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor("OK", np.array(checks, np.bool_))],
                parameters={"results": repr(results)}))
        return responses
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp("forked_bls")
    vector = 'dims: [ -1 ]'
    write_model(repo, "add_sub", 'backend: "python"\n'
                f'input {{ name: "INPUT0" data_type: TYPE_FP32 {vector} }}\n'
                f'input {{ name: "INPUT1" data_type: TYPE_FP32 {vector} }}\n'
                f'output {{ name: "OUTPUT0" data_type: TYPE_FP32 {vector} }}\n'
                f'output {{ name: "OUTPUT1" data_type: TYPE_FP32 {vector} }}\n',
                files={"1/model.py": ADD_SUB})
    write_model(repo, "countdown", 'backend: "python"\n'
                'model_transaction_policy { decoupled: true }\n'
                'input { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] }\n'
                'output { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }\n',
                files={"1/model.py": COUNTDOWN})
    write_model(repo, "forker", 'backend: "python"\n'
                'input { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] }\n'
                'output { name: "OK" data_type: TYPE_BOOL dims: [ -1 ] }\n',
                files={"1/model.py": FORKER})
    with ServerProcess([repo]) as process:
        yield process


def _ask_forker(server: ServerProcess) -> httpclient.InferResult:
    client = httpclient.InferenceServerClient(server.http_url, network_timeout=120)
    tensor = httpclient.InferInput("IN", [1], "INT32")
    tensor.set_data_from_numpy(np.zeros(1, np.int32))
    return client.infer("forker", [tensor])


def test_pool_workers_and_their_children_make_bls_requests(server: ServerProcess) -> None:
    result = _ask_forker(server)
    ok = result.as_numpy("OK").tolist()
    assert ok == [True] * 10, result.get_response()["parameters"]["results"]
    for index in range(8):
        server.wait_log(f"forked worker {index} says hello")


def test_the_server_keeps_serving_the_stub_after_its_children_end(server: ServerProcess) -> None:
    for _ in range(2):
        assert _ask_forker(server).as_numpy("OK").all()


SLEEPY = """
import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        time.sleep(5)
        return [pb_utils.InferenceResponse([]) for _ in requests]
"""

ORPHANING = """
import os
import sys
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        report = pb_utils.get_input_tensor_by_name(requests[0], "PATH").as_numpy()[0].decode()
        if os.fork() == 0:
            response = pb_utils.InferenceRequest(
                model_name="sleepy", inputs=[], requested_output_names=[]).exec()
            with open(report, "w") as file:
                file.write(response.error().message() if response.has_error() else "answered")
            os._exit(0)
        time.sleep(1)  # the child's request is in flight
        sys.stdout.flush()
        os._exit(1)  # the stub dies
"""


def test_a_forked_child_waiting_on_bls_is_released_when_its_stub_dies(tmp_path) -> None:
    repo = tmp_path / "repo"
    write_model(repo, "sleepy", 'backend: "python"\n', files={"1/model.py": SLEEPY})
    write_model(repo, "orphaning", 'backend: "python"\n'
                'input { name: "PATH" data_type: TYPE_STRING dims: [ 1 ] }\n'
                'output { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }\n',
                files={"1/model.py": ORPHANING})
    report = tmp_path / "report.txt"
    with ServerProcess([repo]) as process:
        client = httpclient.InferenceServerClient(process.http_url, network_timeout=60)
        tensor = httpclient.InferInput("PATH", [1], "BYTES")
        tensor.set_data_from_numpy(np.array([str(report).encode()], np.object_))
        with pytest.raises(InferenceServerException, match="is not healthy"):
            client.infer("orphaning", [tensor])
        deadline = time.monotonic() + 10
        while not report.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    assert report.read_text() == "BLS request received no response"
