"""Requests that queue up for a Python model with no batcher: the server hands several to the
stub in one exchange, but the model still sees what Triton gives it, one request per execute,
in arrival order; a failing execution fails its own request alone; each counts as its own
execution in the statistics; a stub dying among them fails those not yet answered, and the
restarted stub serves the next."""

from __future__ import annotations

import queue
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from support.python_backend_fixtures import grpc_input, one_model_server, wait_for
from support.server_process import ServerProcess

MODEL = '''
import os
import time
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.log = args["model_repository"] + "/executions.txt"

    def execute(self, requests):
        with open(self.log, "a") as log:
            log.write(" ".join(r.request_id() for r in requests) + "\\n")
        responses = []
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            if value[0] == -2:
                os._exit(1)  # the stub dies mid-queue
            if value[0] == 9:  # wait for the test's go-ahead
                release = os.path.dirname(self.log) + "/release"
                deadline = time.monotonic() + 10
                while not os.path.exists(release) and time.monotonic() < deadline:
                    time.sleep(0.01)
                value = value * 0
            if value[0] < 0:
                raise ValueError("negative input")
            time.sleep(float(value[0]))
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", value * 2)]))
        return responses
'''

CONFIG = '''
name: "queued"
backend: "python"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
'''


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    yield from one_model_server(tmp_path_factory, "queued", CONFIG, MODEL)


def _input(value: float) -> list[grpcclient.InferInput]:
    return [grpc_input("IN", np.array([value], np.float32), "FP32")]


def _send_in_order(server: ServerProcess, client: grpcclient.InferenceServerClient,
                   ids: list[str], values: dict[str, float]) -> dict[str, tuple]:
    """Send the first request, and once the model runs it, the others on one connection, in
    order (the server queues them in that order while the first runs): each id's (result,
    error)."""
    answers: queue.Queue = queue.Queue()
    log = Path(server.repo) / "queued" / "executions.txt"  # type: ignore[attr-defined]
    for index, rid in enumerate(ids):
        client.async_infer("queued", _input(values.get(rid, 0.0)), request_id=rid,
                           callback=lambda result, error, rid=rid: answers.put(
                               (rid, result, error)))
        if index == 0:
            wait_for(lambda: log.exists() and ids[0] in log.read_text().split())
    results = {}
    for _ in ids:
        rid, result, error = answers.get(timeout=60)
        results[rid] = (result, error)
    return results


def test_queued_requests_run_one_per_execute_in_arrival_order(server) -> None:
    log = Path(server.repo) / "queued" / "executions.txt"
    ids = ["slow"] + [f"q{i}" for i in range(12)]
    values = {"slow": 0.5, "q5": -1.0}  # q5's execute raises
    earlier = log.read_text().split("\n")[:-1] if log.exists() else []
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        before = client.get_inference_statistics("queued").model_stats[0]
        results = _send_in_order(server, client, ids, values)
        after = client.get_inference_statistics("queued").model_stats[0]

    executions = log.read_text().split("\n")[len(earlier):-1]
    assert executions == ids  # one request per execute, in order
    for rid in ids:
        result, error = results[rid]
        if rid == "q5":
            assert result is None
            assert "negative input" in error.message()
        else:
            assert error is None, rid
            expected = np.array([values.get(rid, 0.0) * 2], np.float32)
            np.testing.assert_array_equal(result.as_numpy("OUT"), expected)
    assert after.execution_count - before.execution_count == len(ids)
    assert after.inference_count - before.inference_count == len(ids) - 1  # successes
    assert (after.inference_stats.success.count - before.inference_stats.success.count
            == len(ids) - 1)
    assert after.inference_stats.fail.count - before.inference_stats.fail.count == 1
    batch_stats = {b.batch_size: b.compute_infer.count for b in after.batch_stats}
    assert set(batch_stats) == {1}


def test_a_stub_dying_among_queued_requests_fails_them_and_is_restarted(server) -> None:
    ids = ["slow2", "a0", "crash", "a2", "a3"]
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        results = _send_in_order(server, client, ids, {"slow2": 0.5, "crash": -2.0})
        assert results["slow2"][1] is None  # it ran alone, answered before the others came
        assert "Stub process 'queued_0_0' is not healthy." in results["crash"][1].message()
        # The others ran before the crash (their answers may have waited for its), died with
        # the stub, or ran in the restarted one: answered, or failed as the stub failed.
        for rid in ("a0", "a2", "a3"):
            error = results[rid][1]
            assert error is None or error.message() == "Stub process 'queued_0_0' is not healthy."
        # The restarted stub serves the next.
        result = client.infer("queued", _input(0.0))
        np.testing.assert_array_equal(result.as_numpy("OUT"), np.array([0.0], np.float32))


def test_a_queued_answer_does_not_wait_for_a_slow_execution_after_it(server) -> None:
    """B runs only once the test has A's answer: were A's answer held until B ends, B would
    wait out its 10 s and the test its 5 s for A."""
    release = Path(server.repo) / "queued" / "release"
    answers: queue.Queue = queue.Queue()
    log = Path(server.repo) / "queued" / "executions.txt"
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        for rid, value in (("first", 0.3), ("A", 0.2), ("B", 9.0)):
            client.async_infer("queued", _input(value), request_id=rid,
                               callback=lambda result, error, rid=rid: answers.put((rid, error)))
            if rid == "first":
                wait_for(lambda: log.exists() and "first" in log.read_text().split())
        assert answers.get(timeout=5) == ("first", None)
        assert answers.get(timeout=5) == ("A", None)
        release.write_text("")
        assert answers.get(timeout=15) == ("B", None)
