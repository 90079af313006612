"""The `probe` Python model and client helpers shared by the scheduling tests.

`probe` reports, per request, how many requests shared its execute (REQUESTS), how many
distinct INPUT0 shapes were among them (SHAPES) and when its execute ended (DONE, time.time()
on the same machine as the client); it sleeps for the largest first element of INPUT0 among
its requests, in milliseconds, so each test sets how long an execute takes. A negative first
element is a blocker instead: the execute waits until the test opens the model's gate
(`open_gate`), so ordering tests hold the instance exactly as long as they need, however loaded
the machine.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import numpy as np
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.server_process import ServerProcess

PROBE = '''
import os
import time
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.gate = os.path.join(args["model_repository"], "gate")

    def execute(self, requests):
        inputs = [pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy() for r in requests]
        if any(float(x.flat[0]) < 0 for x in inputs):
            deadline = time.monotonic() + 120
            while not os.path.exists(self.gate) and time.monotonic() < deadline:
                time.sleep(0.01)
            if os.path.exists(self.gate):
                os.remove(self.gate)
        time.sleep(max(0.0, *(float(x.flat[0]) for x in inputs)) / 1000.0)
        shapes = len({x.shape[1:] for x in inputs})
        done = time.time()
        responses = []
        for x in inputs:
            rows = x.shape[0]
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUTPUT0", x),
                pb_utils.Tensor("REQUESTS", np.full((rows, 1), len(requests), np.int32)),
                pb_utils.Tensor("SHAPES", np.full((rows, 1), shapes, np.int32)),
                pb_utils.Tensor("DONE", np.full((rows, 1), done, np.float64)),
            ]))
        return responses
'''


def probe_config(name: str, batching: str, *, max_batch_size: int = 8, instances: int = 1,
                 ragged: bool = False) -> str:
    return f"""
        name: "{name}"
        backend: "python"
        max_batch_size: {max_batch_size}
        input {{ name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ]
                 allow_ragged_batch: {str(ragged).lower()} }}
        output {{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] }}
        output {{ name: "REQUESTS" data_type: TYPE_INT32 dims: [ 1 ] }}
        output {{ name: "SHAPES" data_type: TYPE_INT32 dims: [ 1 ] }}
        output {{ name: "DONE" data_type: TYPE_FP64 dims: [ 1 ] }}
        instance_group {{ count: {instances} kind: KIND_CPU }}
        dynamic_batching {{ {batching} }}
        """


class Outcome:
    """One request's result (or error) and when it completed, in the client's order of events."""

    _sequence = iter(range(1 << 62))
    _lock = threading.Lock()

    def __init__(self, result: Any, error: InferenceServerException | None) -> None:
        self.result = result
        self.error = error
        self.received = time.time()
        with Outcome._lock:
            self.finished = next(Outcome._sequence)

    def column(self, name: str) -> list[int]:
        assert self.error is None, self.error
        return [int(v) for v in self.result.as_numpy(name).reshape(-1)]


def infer(server: ServerProcess, model: str, data: np.ndarray, **options: Any) -> Outcome:
    client = httpclient.InferenceServerClient(server.http_url, network_timeout=60)
    tensor = httpclient.InferInput("INPUT0", list(data.shape), "FP32")
    tensor.set_data_from_numpy(data)
    try:
        result = client.infer(model, [tensor], **options)
    except InferenceServerException as error:
        return Outcome(None, error)
    finally:
        client.close()
    return Outcome(result, None)


def open_gate(server: ServerProcess, model: str) -> None:
    """Let the probe's current blocker (a request with a negative sleep) finish."""
    (Path(server.repositories[0]) / model / "gate").touch()


def rows(*values: float, width: int = 1) -> np.ndarray:
    """A [len(values), width] FP32 batch whose rows start with `values` (the probe's sleep)."""
    data = np.zeros((len(values), width), np.float32)
    data[:, 0] = values
    return data


def concurrently(server: ServerProcess, model: str, arrays: list[np.ndarray],
                 **options: Any) -> list[Outcome]:
    with ThreadPoolExecutor(len(arrays)) as pool:
        futures = [pool.submit(infer, server, model, a, **options) for a in arrays]
        return [f.result() for f in futures]


def after_blocker(server: ServerProcess, model: str,
                  then: list[tuple[np.ndarray, dict[str, Any]]],
                  until_answered: bool = False, hold: float = 0.0
                  ) -> tuple[Outcome, list[Outcome]]:
    """Send a request that keeps the one instance busy, then (while it runs) the `then`
    requests, one after another in that order, each without waiting for answers; the blocker
    ends once the server holds (or has answered) them all, with `until_answered` once they
    are all answered (a queue policy's timeout), and `hold` seconds after that."""
    with ThreadPoolExecutor(len(then) + 1) as pool:
        blocker = pool.submit(infer, server, model, rows(-1))
        server.wait_pending(model, 1)
        time.sleep(0.1)  # accepted; the idle instance takes it at once: the others queue behind
        futures = []
        for data, options in then:
            futures.append(pool.submit(infer, server, model, data, **options))
            # The server holds it (or has already refused it) before the next one is sent, so
            # the queue order is the order of `then`.
            _wait_held_or_answered(server, model, blocker, futures)
        if until_answered:
            wait(futures, timeout=60)
        time.sleep(hold)
        assert not blocker.done(), blocker.result().error
        open_gate(server, model)
        return blocker.result(), [f.result() for f in futures]


def _wait_held_or_answered(server: ServerProcess, model: str, blocker: Future,
                           futures: list[Future]) -> None:
    sent = [blocker, *futures]
    deadline = time.monotonic() + 30
    while server.metric("nv_inference_pending_request_count", model) != sum(
            not f.done() for f in sent):
        assert time.monotonic() < deadline, f"{model}: the server never took the request"
        time.sleep(0.005)
