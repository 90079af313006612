"""A unary ModelInfer that ends before its answer (the client's deadline passes, or it cancels
the call) reaches the Python model as `request.is_cancelled()`, and the server goes on serving;
as Triton 2.51's gRPC frontend cancels an in-flight unary request."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pbg
from tritonclient.utils import InferenceServerException

from support.python_backend_fixtures import grpc_input, one_model_server

MODEL = '''
import time
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.log = args["model_repository"] + "/cancelled.txt"

    def execute(self, requests):
        responses = []
        for request in requests:
            wait = float(pb_utils.get_input_tensor_by_name(request, "WAIT").as_numpy()[0])
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                if request.is_cancelled():
                    with open(self.log, "a") as log:
                        log.write(request.request_id() + "\\n")
                    break
                time.sleep(0.01)
            out = pb_utils.Tensor("OUT", np.array([wait], np.float32))
            responses.append(pb_utils.InferenceResponse([out]))
        return responses
'''

CONFIG = '''
name: "waiter"
backend: "python"
input [ { name: "WAIT" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
'''


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    yield from one_model_server(tmp_path_factory, "waiter", CONFIG, MODEL, "--log-verbose=1")


def _wait_input(seconds: float) -> grpcclient.InferInput:
    return grpc_input("WAIT", np.array([seconds], np.float32), "FP32")


def _seen_cancelled(repo: Path, request_id: str, timeout: float = 10.0) -> bool:
    log = repo / "waiter" / "cancelled.txt"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and request_id in log.read_text().split():
            return True
        time.sleep(0.05)
    return False


def test_a_passed_deadline_cancels_the_request_in_the_model(server) -> None:
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        with pytest.raises(InferenceServerException) as info:
            client.infer("waiter", [_wait_input(20.0)], request_id="late", client_timeout=0.3)
        assert info.value.status() == "StatusCode.DEADLINE_EXCEEDED"
        assert _seen_cancelled(server.repo, "late")
        result = client.infer("waiter", [_wait_input(0.0)], request_id="next")
        np.testing.assert_array_equal(result.as_numpy("OUT"), np.array([0.0], np.float32))


def test_a_call_the_client_cancels_is_cancelled_in_the_model(server) -> None:
    request = pb.ModelInferRequest(model_name="waiter", id="dropped")
    request.inputs.add(name="WAIT", datatype="FP32", shape=[1])
    request.raw_input_contents.append(np.array([20.0], np.float32).tobytes())

    async def cancel_mid_call() -> grpc.StatusCode:
        async with grpc.aio.insecure_channel(server.grpc_url) as channel:
            call = pbg.GRPCInferenceServiceStub(channel).ModelInfer(request)
            await asyncio.sleep(0.3)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            return await call.code()

    assert asyncio.run(cancel_mid_call()) is grpc.StatusCode.CANCELLED
    assert _seen_cancelled(server.repo, "dropped")
    # Triton's verbose line, which its L0_request_cancellation greps the log for.
    server.wait_log("Cancellation notification received for ModelInferHandler")
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        result = client.infer("waiter", [_wait_input(0.0)])
        np.testing.assert_array_equal(result.as_numpy("OUT"), np.array([0.0], np.float32))
