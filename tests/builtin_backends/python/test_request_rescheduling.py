"""Request rescheduling, as Triton's python_backend documents it: a model calls
`request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)` and the request
runs again in a later execution (`sequence_batching { iterative_sequence: true }`), for
non-decoupled models (which return None for it) and decoupled ones (one response per run).
Checked side by side with Triton 2.51: the same answers, correlation IDs, flags and errors; where
Triton leaves a request unanswered (a model not configured for rescheduling), Tritium answers it
with Triton's own error."""

from __future__ import annotations

import json
import queue
import threading
import urllib.request

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.models import write_model
from support.server_process import ServerProcess

# Runs each request STEPS times (rescheduling it meanwhile) and then answers how many runs it
# had, the correlation ID the sequence batcher gave it, and the flags of its first and last run.
GENERATE_MODEL = '''
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.runs = {}

    def execute(self, requests):
        responses = []
        for request in requests:
            cid = request.correlation_id()
            runs, first_flags = self.runs.get(cid, (0, request.flags()))
            runs += 1
            steps = int(pb_utils.get_input_tensor_by_name(request, "STEPS").as_numpy().flat[0])
            if runs < steps:
                self.runs[cid] = (runs, first_flags)
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                if json.loads(request.parameters()).get("respond_anyway"):
                    responses.append(pb_utils.InferenceResponse([]))
                else:
                    responses.append(None)  # the rescheduled request answers later
                continue
            self.runs.pop(cid, None)
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("RUNS", np.array([[runs]], np.int32)),
                pb_utils.Tensor("CID", np.array([[cid]], np.uint64)),
                pb_utils.Tensor("FLAGS", np.array([[first_flags, request.flags()]], np.uint32)),
            ]))
        return responses
'''

GENERATE_CONFIG = '''
name: "{name}"
backend: "python"
max_batch_size: 4
input [ {{ name: "STEPS" data_type: TYPE_INT32 dims: [ 1 ] }} ]
output [ {{ name: "RUNS" data_type: TYPE_INT32 dims: [ 1 ] }},
         {{ name: "CID" data_type: TYPE_UINT64 dims: [ 1 ] }},
         {{ name: "FLAGS" data_type: TYPE_UINT32 dims: [ 2 ] }} ]
{scheduling}
'''

# Decoupled: one response per run, with the steps left; the last one is FINAL.
STREAM_MODEL = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.left = {}

    def execute(self, requests):
        for request in requests:
            cid = request.correlation_id()
            if cid not in self.left:
                steps = pb_utils.get_input_tensor_by_name(request, "STEPS").as_numpy()
                self.left[cid] = int(steps.flat[0])
            self.left[cid] -= 1
            left = self.left[cid]
            response = pb_utils.InferenceResponse([
                pb_utils.Tensor("LEFT", np.array([left], np.int32)),
                pb_utils.Tensor("CID", np.array([cid], np.uint64)),
            ])
            sender = request.get_response_sender()
            if left > 0:
                sender.send(response)
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
            else:
                del self.left[cid]
                sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
'''

STREAM_CONFIG = '''
name: "{name}"
backend: "python"
max_batch_size: 0
input [ {{ name: "STEPS" data_type: TYPE_INT32 dims: [ 1 ] }} ]
output [ {{ name: "LEFT" data_type: TYPE_INT32 dims: [ 1 ] }},
         {{ name: "CID" data_type: TYPE_UINT64 dims: [ 1 ] }} ]
model_transaction_policy {{ decoupled: true }}
{scheduling}
'''

ITERATIVE = "sequence_batching { iterative_sequence: true }"
ITERATIVE_OLDEST = (
    "sequence_batching { iterative_sequence: true oldest { max_candidate_sequences: 4 } }"
)
NOT_CONFIGURED = (
    "Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model is not "
    "configured to handle such a flag."
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp("rescheduling_repo")
    for name, scheduling in (("generate", ITERATIVE), ("generate_plain", ""),
                             ("generate_oldest", ITERATIVE_OLDEST)):
        write_model(repo, name, GENERATE_CONFIG.format(name=name, scheduling=scheduling),
                    files={"1/model.py": GENERATE_MODEL})
    for name, scheduling in (("stream", ITERATIVE), ("stream_plain", "")):
        write_model(repo, name, STREAM_CONFIG.format(name=name, scheduling=scheduling),
                    files={"1/model.py": STREAM_MODEL})
    with ServerProcess([repo]) as process:
        yield process


def generate(server: ServerProcess, steps: int, model: str = "generate",
             parameters: dict | None = None) -> httpclient.InferResult:
    client = httpclient.InferenceServerClient(server.http_url, network_timeout=60)
    tensor = httpclient.InferInput("STEPS", [1, 1], "INT32")
    tensor.set_data_from_numpy(np.array([[steps]], np.int32))
    return client.infer(model, [tensor], parameters=parameters)


def stream(server: ServerProcess, steps: int, model: str = "stream", **kwargs) -> list:
    """(LEFT, CID, final) per response of one streamed request, or ("error", text)."""
    answers: queue.Queue = queue.Queue()
    client = grpcclient.InferenceServerClient(server.grpc_url)
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    try:
        tensor = grpcclient.InferInput("STEPS", [1], "INT32")
        tensor.set_data_from_numpy(np.array([steps], np.int32))
        client.async_stream_infer(model, [tensor], enable_empty_final_response=True, **kwargs)
        got: list = []
        while True:
            result, error = answers.get(timeout=60)
            if error is not None:
                got.append(("error", error.message()))
                return got
            final = result.get_response().parameters["triton_final_response"].bool_param
            got.append((int(result.as_numpy("LEFT")[0]), int(result.as_numpy("CID")[0]), final))
            if final:
                return got
    finally:
        client.stop_stream()
        client.close()


def statistics(server: ServerProcess, model: str) -> dict:
    client = httpclient.InferenceServerClient(server.http_url)
    return client.get_inference_statistics(model)["model_stats"][0]


def test_non_decoupled_request_runs_again_until_answered(server):
    answers = [generate(server, steps) for steps in (1, 3, 5)]
    assert [int(a.as_numpy("RUNS")[0][0]) for a in answers] == [1, 3, 5]
    # Each request is a sequence of its own: the sequence batcher numbers them from 1.
    cids = [int(a.as_numpy("CID")[0][0]) for a in answers]
    assert cids == sorted(cids) and len(set(cids)) == 3 and cids[0] >= 1
    # The first run is flagged START; a rescheduled run comes with its flags cleared.
    assert answers[0].as_numpy("FLAGS").tolist() == [[1, 1]]
    assert answers[1].as_numpy("FLAGS").tolist() == [[1, 0]]


def test_every_run_counts_as_an_inference(server):
    before = statistics(server, "generate")
    generate(server, 4)
    after = statistics(server, "generate")
    # As Triton counts them: each execution of a rescheduled request is a successful inference.
    assert after["execution_count"] - before["execution_count"] == 4
    assert after["inference_count"] - before["inference_count"] == 4
    success = after["inference_stats"]["success"]["count"]
    assert success - before["inference_stats"]["success"]["count"] == 4


@pytest.mark.parametrize("model", ["generate", "generate_oldest"])
def test_concurrent_sequences_each_get_their_own_answer(server, model):
    # More sequences than slots: the last ones wait in the backlog for a slot to free.
    results: dict[int, object] = {}

    def run(steps: int) -> None:
        try:
            results[steps] = int(generate(server, steps, model).as_numpy("RUNS")[0][0])
        except Exception as exc:  # reported below, with the others
            results[steps] = exc

    threads = [threading.Thread(target=run, args=(steps,)) for steps in (2, 4, 6, 8, 10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {2: 2, 4: 4, 6: 6, 8: 8, 10: 10}


def test_rescheduled_request_must_get_none(server):
    with pytest.raises(InferenceServerException) as caught:
        generate(server, 2, parameters={"respond_anyway": True})
    assert caught.value.status() == "500"
    assert caught.value.message() == (
        "Failed to process the request(s) for model 'generate_0', message: Expected a None "
        "object in the execute function return list for reschduled request, found type "
        "'<class 'c_python_backend_utils.InferenceResponse'>'."
    )
    assert int(generate(server, 2).as_numpy("RUNS")[0][0]) == 2  # the model keeps serving


def test_decoupled_request_streams_one_response_per_run(server):
    got = stream(server, 3)
    assert [(left, final) for left, _, final in got] == [(2, False), (1, False), (0, True)]
    assert len({cid for _, cid, _ in got}) == 1
    # A client's own sequence is kept (it gave the START flag itself).
    got = stream(server, 2, sequence_id=77, sequence_start=True)
    assert got == [(1, 77, False), (0, 77, True)]


def test_decoupled_generate_stream(server):
    request = urllib.request.Request(
        f"http://{server.http_url}/v2/models/stream/generate_stream",
        data=json.dumps({"STEPS": 3}).encode(), method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as reply:
        body = reply.read().decode()
    events = [json.loads(line[len("data: "):]) for line in body.splitlines() if line]
    assert [event["LEFT"] for event in events] == [2, 1, 0]


def test_model_not_configured_for_rescheduling(server):
    # Triton 2.51 logs this error and leaves the request unanswered; Tritium answers it.
    with pytest.raises(InferenceServerException) as caught:
        generate(server, 3, model="generate_plain")
    assert caught.value.status() == "400"
    assert caught.value.message() == NOT_CONFIGURED
    assert f"Failed to release request: {NOT_CONFIGURED}" in server.log()
    # The model keeps serving (its requests belong to no sequence: correlation ID 0).
    assert int(generate(server, 1, model="generate_plain").as_numpy("CID")[0][0]) == 0
    # A decoupled model keeps what it already sent; the error ends the stream.
    assert stream(server, 3, model="stream_plain") == [(2, 0, False), ("error", NOT_CONFIGURED)]
