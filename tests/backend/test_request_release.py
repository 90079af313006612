"""Request rescheduling through the backend API, as a backend author uses it: Triton's
TRITONBACKEND_RequestRelease with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE is
`request.release(REQUEST_RELEASE_RESCHEDULE)`; the request runs again once execute returns when
the model has `sequence_batching { iterative_sequence: true }`, and is refused with Triton's
error otherwise."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.models import write_model
from support.server_process import ServerProcess

# Counts the runs of each request (by the correlation ID its iterative sequence got) and answers
# once it had STEPS of them.
COUNTDOWN_BACKEND = '''
import numpy as np

from tritium.backend import REQUEST_RELEASE_RESCHEDULE, InferenceResponse, Tensor, TritonError

runs = {}


def model_instance_execute(instance, requests):
    for request in requests:
        key = (instance.model.name, request.correlation_id)
        runs[key] = runs.get(key, 0) + 1
        if runs[key] < int(request.inputs["STEPS"].data.reshape(-1)[0]):
            try:
                request.release(REQUEST_RELEASE_RESCHEDULE)  # no response for this run
            except TritonError:  # the model cannot run it again: the client gets the error
                del runs[key]
                raise
            continue
        done = np.array([runs.pop(key)], np.int32)
        request.respond(InferenceResponse(outputs=[Tensor.from_numpy("RUNS", done)]))
'''

CONFIG = '''
backend: "countdown"
max_batch_size: 0
input [ { name: "STEPS" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "RUNS" data_type: TYPE_INT32 dims: [ 1 ] } ]
'''


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    root: Path = tmp_path_factory.mktemp("request_release")
    backends, repo = root / "backends", root / "repo"
    (backends / "countdown").mkdir(parents=True)
    (backends / "countdown" / "backend.py").write_text(COUNTDOWN_BACKEND)
    write_model(repo, "iterative", CONFIG + "sequence_batching { iterative_sequence: true }\n")
    write_model(repo, "plain", CONFIG)
    with ServerProcess([repo], f"--backend-directory={backends}") as process:
        yield process


def runs(server: ServerProcess, model: str, steps: int) -> int:
    client = httpclient.InferenceServerClient(server.http_url)
    tensor = httpclient.InferInput("STEPS", [1], "INT32")
    tensor.set_data_from_numpy(np.array([steps], np.int32))
    return int(client.infer(model, [tensor]).as_numpy("RUNS")[0])


def test_a_released_request_runs_again(server: ServerProcess) -> None:
    assert [runs(server, "iterative", steps) for steps in (1, 2, 7)] == [1, 2, 7]
    client = httpclient.InferenceServerClient(server.http_url)
    stats = client.get_inference_statistics("iterative")["model_stats"][0]
    assert stats["execution_count"] == 10 and stats["inference_count"] == 10


def test_a_model_without_iterative_sequence_refuses_it(server: ServerProcess) -> None:
    with pytest.raises(InferenceServerException) as caught:
        runs(server, "plain", 2)
    assert caught.value.status() == "400"
    assert caught.value.message() == (
        "Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model is "
        "not configured to handle such a flag."
    )
    assert runs(server, "plain", 1) == 1  # the model keeps serving
