"""`--exit-timeout-secs` bounds the time from SIGTERM to exit, whatever is queued or running.

A python model sleeps 0.25 s per request and 200 requests queue for it (one instance): run
out, they would take 50 s. On SIGTERM with --exit-timeout-secs=3 the queue goes on running, as
Triton's does, until the timeout; the requests still queued then get UNAVAILABLE, the one
executing finishes, and the process exits. (Once the server ran the whole queue and exited
after ~49 s.)

An execution that outlasts the timeout does not hold the exit either: the server exits as
tritonserver does, "failed to stop server: Exit timeout expired. Exiting immediately.", code 1.
"""

from __future__ import annotations

import re
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

import tritonserver
from support.models import write_model
from support.python_backend_fixtures import alive, stub_pids
from support.server_process import ServerProcess

CONFIG = """
name: "sleeper"
backend: "python"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
"""

MODEL = '''
import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            time.sleep(0.25)
            value = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0",
                                                                         value.as_numpy())]))
        return responses
'''

QUEUED = 200

ENSEMBLE = """
name: "pipeline"
platform: "ensemble"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1 ] } ]
ensemble_scheduling { step [ { model_name: "sleeper" model_version: -1
  input_map { key: "INPUT0" value: "INPUT0" } output_map { key: "OUTPUT0" value: "OUTPUT0" } } ] }
"""

# Leaves a file `started` in the model's folder when its execution begins.
LONG_MODEL = '''
import pathlib
import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.marker = pathlib.Path(args["model_repository"]) / "started"

    def execute(self, requests):
        self.marker.write_text("started")
        time.sleep(SECONDS)
        return [pb_utils.InferenceResponse([]) for _ in requests]
'''


def _wait_queued(server: ServerProcess, count: int) -> None:
    """Wait until `count` requests wait for the model (the one instance runs up to 16 of the
    others in one go, and those are not pending)."""
    deadline = time.monotonic() + 60
    while server.metric("nv_inference_pending_request_count", "sleeper") < count:
        assert time.monotonic() < deadline, "the requests never queued"
        time.sleep(0.05)


def test_sigterm_runs_the_queue_until_the_exit_timeout_then_fails_the_rest(tmp_path) -> None:
    write_model(tmp_path, "sleeper", CONFIG, files={"1/model.py": MODEL})
    errors: list[str] = []
    answered = threading.Semaphore(0)

    def done(result, error) -> None:
        if error is not None:
            errors.append(f"{error.status()} {error.message()}")
        answered.release()

    with ServerProcess([tmp_path], "--exit-timeout-secs=3") as server:
        # Several connections: one carries at most 100 calls at a time.
        clients = [grpcclient.InferenceServerClient(
            server.grpc_url, channel_args=[("grpc.use_local_subchannel_pool", 1)])
            for _ in range(4)]
        tensor = grpcclient.InferInput("INPUT0", [1], "FP32")
        tensor.set_data_from_numpy(np.ones(1, np.float32))
        for index in range(QUEUED):
            clients[index % 4].async_infer("sleeper", [tensor], done, client_timeout=120)
        _wait_queued(server, QUEUED - 40)
        start = time.monotonic()
        assert server.process is not None
        server.process.send_signal(signal.SIGTERM)
        code = server.wait_exit(60)
        took = time.monotonic() - start
        for _ in range(QUEUED):  # every call is answered, by the server or by the closed channel
            assert answered.acquire(timeout=30)
        for client in clients:
            client.close()
    print(f"exited {code} {took:.1f} s after SIGTERM; {len(errors)} of {QUEUED} failed")
    assert code == 0, server.log()
    assert took < 7, f"exited {took:.1f} s after SIGTERM with --exit-timeout-secs=3"
    # At most 40 were not queued and a dozen ran in the 3 s: the rest were refused.
    assert len(errors) >= QUEUED - 60, errors[:3]
    assert any("UNAVAILABLE" in error for error in errors), errors[:3]


def test_an_execution_past_the_timeout_does_not_hold_the_exit(tmp_path: Path) -> None:
    write_model(tmp_path, "sleeper", CONFIG,
                files={"1/model.py": LONG_MODEL.replace("SECONDS", "120")})
    errors: list[str] = []
    answered = threading.Event()

    def done(result, error) -> None:
        errors.append("" if error is None else error.message())
        answered.set()

    with ServerProcess([tmp_path], "--exit-timeout-secs=2") as server:
        assert server.process is not None
        stubs = stub_pids(server.process.pid)
        client = grpcclient.InferenceServerClient(server.grpc_url)
        tensor = grpcclient.InferInput("INPUT0", [1], "FP32")
        tensor.set_data_from_numpy(np.ones(1, np.float32))
        client.async_infer("sleeper", [tensor], done, client_timeout=120)
        _wait_started(tmp_path)
        start = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        code = server.wait_exit(60)
        took = time.monotonic() - start
        assert answered.wait(30), "the client was never answered"
        client.close()
    print(f"exited {code} {took:.1f} s after SIGTERM")
    assert code == 1, server.log()
    assert took < 6, f"exited {took:.1f} s after SIGTERM with --exit-timeout-secs=2"
    assert "failed to stop server: Exit timeout expired. Exiting immediately." in server.log()
    assert errors and errors[0], "the request in flight was answered as if it had run"
    deadline = time.monotonic() + 30
    while any(alive(pid) for pid in stubs):
        assert time.monotonic() < deadline, "the model's stub outlived the server"
        time.sleep(0.1)



def test_in_process_stop_gives_up_on_an_execution_past_the_exit_timeout(tmp_path: Path) -> None:
    """In process, `Server.stop()` raises InternalError "Exit timeout expired. Exiting
    immediately." (Triton core's python API test expects exactly this) instead of waiting."""
    write_model(tmp_path, "sleeper", CONFIG,
                files={"1/model.py": LONG_MODEL.replace("SECONDS", "10")})
    server = tritonserver.Server(model_repository=str(tmp_path), exit_timeout=1,
                                 log_error=False).start(wait_until_ready=True)
    model = server.model("sleeper")
    threading.Thread(
        target=lambda: list(model.infer(inputs={"INPUT0": np.ones(1, np.float32)})),
        daemon=True).start()
    _wait_started(tmp_path)
    start = time.monotonic()
    with pytest.raises(tritonserver.InternalError,
                       match="Exit timeout expired. Exiting immediately."):
        server.stop()
    took = time.monotonic() - start
    assert took < 5, f"stop took {took:.1f} s with exit_timeout=1 (the execution takes 10 s)"


def _wait_started(repository: Path) -> None:
    deadline = time.monotonic() + 60
    while not (repository / "sleeper" / "started").exists():
        assert time.monotonic() < deadline, "the request never started executing"
        time.sleep(0.05)


def test_requests_in_flight_finish_while_new_ones_are_refused(tmp_path: Path) -> None:
    """As Triton stops: the requests already queued run and are answered, the frontends still
    up; a new request meanwhile gets Triton's refusal; the log counts what is in flight."""
    write_model(tmp_path, "sleeper", CONFIG, files={"1/model.py": MODEL})
    write_model(tmp_path, "pipeline", ENSEMBLE)
    results: list[str] = []
    answered = threading.Semaphore(0)

    def done(result, error) -> None:
        results.append("ok" if error is None else error.message())
        answered.release()

    with ServerProcess([tmp_path]) as server:
        client = grpcclient.InferenceServerClient(server.grpc_url)
        tensor = grpcclient.InferInput("INPUT0", [1], "FP32")
        tensor.set_data_from_numpy(np.ones(1, np.float32))
        for _ in range(8):  # 2 s of work for the one instance
            client.async_infer("sleeper", [tensor], done, client_timeout=60)
        _wait_queued(server, 4)
        assert server.process is not None
        server.process.send_signal(signal.SIGTERM)
        server.wait_log("Waiting for in-flight requests to complete.")
        with pytest.raises(InferenceServerException) as refused:
            client.infer("sleeper", [tensor])
        assert refused.value.message() == ("Server is stopping, scheduler for model has "
                                           "stopped accepting new inference requests")
        # An ensemble still takes it; its step is refused.
        with pytest.raises(InferenceServerException) as refused:
            client.infer("pipeline", [tensor])
        assert refused.value.message() == (
            "in ensemble 'pipeline', Server is stopping, scheduler for model has stopped "
            "accepting new inference requests")
        for _ in range(8):
            assert answered.acquire(timeout=30)
        assert server.wait_exit(60) == 0
        client.close()
    assert results == ["ok"] * 8
    messages = server.log_messages()
    assert any(re.fullmatch(r"Timeout (29|30): Found 1 model versions that have in-flight "
                            r"inferences", m) for m in messages), messages
    assert any(re.fullmatch(r"Model 'sleeper' \(version 1\) has \d+ in-flight inferences", m)
               for m in messages), messages


SEQUENCE_CONFIG = """
name: "counter"
backend: "python"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1 ] } ]
sequence_batching { max_sequence_idle_microseconds: 60000000 }
"""

ECHO_MODEL = '''
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())])
            for r in requests]
'''


def test_open_sequences_go_on_while_new_ones_are_refused(tmp_path: Path) -> None:
    """As Triton's sequence batcher stops: a new sequence is refused, an open one goes on to
    its end, and the exit waits for it (the log counts it in flight)."""
    write_model(tmp_path, "counter", SEQUENCE_CONFIG, files={"1/model.py": ECHO_MODEL})
    with ServerProcess([tmp_path]) as server:
        client = grpcclient.InferenceServerClient(server.grpc_url)
        tensor = grpcclient.InferInput("INPUT0", [1], "FP32")
        tensor.set_data_from_numpy(np.ones(1, np.float32))
        client.infer("counter", [tensor], sequence_id=5, sequence_start=True)
        assert server.process is not None
        server.process.send_signal(signal.SIGTERM)
        server.wait_log("Model 'counter' (version 1) has 1 in-flight inferences")
        with pytest.raises(InferenceServerException) as refused:
            client.infer("counter", [tensor], sequence_id=6, sequence_start=True)
        assert refused.value.message() == ("Server is stopping, scheduler for model has "
                                           "stopped accepting new inference requests")
        client.infer("counter", [tensor], sequence_id=5)
        client.infer("counter", [tensor], sequence_id=5, sequence_end=True)
        assert server.wait_exit(60) == 0
        client.close()
