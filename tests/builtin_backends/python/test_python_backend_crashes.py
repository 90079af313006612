"""The python backend when stubs die: a killed or exiting stub fails its requests and streams and
is restarted, and nothing (processes, shared memory) is left after the server exits, crashes or
is killed.
The models live in tests/support/python_models/ (repo/: one per behaviour; backends/ +
pybased_repo/: a Python-based backend; bad_repo/: a model whose initialize fails; env_model/: a
model run in an execution environment). Every test drives a real server process with tritonclient.
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import threading
import time
from pathlib import Path

import numpy as np
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.models import write_model
from support.python_backend_fixtures import (
    REPO,
    add_sub_inputs,
    alive,
    error_of,
    grpc,  # noqa: F401
    grpc_input,
    http,  # noqa: F401
    http_input,
    server,  # noqa: F401
    stream,
    stub_pids,
    wait_for,
)
from support.server_process import ServerProcess

# -- crashes -----------------------------------------------------------------------------------


def crashy(client, seconds: float, marker: Path | None = None) -> int:
    inputs = [http_input("SLEEP", np.array([seconds], np.float32), "FP32")]
    if marker is not None:
        inputs.append(http_input("MARKER", np.array([str(marker).encode()], np.object_), "BYTES"))
    return int(client.infer("crashy", inputs).as_numpy("PID")[0])


def test_a_killed_stub_fails_its_requests_and_restarts(server, http, tmp_path: Path) -> None:
    pid = crashy(http, 0)
    assert pid in stub_pids(server.process.pid)
    marker = tmp_path / "executing"
    outcome: dict = {}

    def in_flight() -> None:
        client = httpclient.InferenceServerClient(server.http_url, network_timeout=60)
        try:
            outcome["pid"] = crashy(client, 30, marker)
        except InferenceServerException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=in_flight)
    thread.start()
    wait_for(marker.exists)  # the request is inside execute
    os.kill(pid, signal.SIGKILL)
    thread.join(30)
    assert not thread.is_alive()
    assert outcome["error"].message() == "Stub process 'crashy_0' is not healthy."
    # Restarting (its initialize takes a second): not ready, and a request made now waits for
    # the new stub instead of failing (only the requests the dead stub held fail).
    wait_for(lambda: not http.is_model_ready("crashy"))
    new_pid = crashy(http, 0)
    assert http.is_model_ready("crashy")
    assert new_pid != pid and new_pid in stub_pids(server.process.pid)
    assert not alive(pid)
    # Other models never noticed.
    assert http.infer("add_sub", add_sub_inputs()).as_numpy("OUTPUT0") is not None


def test_a_stub_exiting_during_execute_is_restarted(server, http) -> None:
    err = error_of(lambda: crashy(http, -1))
    assert err.message() == "Stub process 'crashy_0' is not healthy."
    wait_for(lambda: http.is_model_ready("crashy"))
    assert crashy(http, 0) > 0


def test_a_killed_stub_ends_its_open_streams_with_an_error(server, grpc, http) -> None:
    events: queue.Queue = queue.Queue()
    grpc.start_stream(callback=lambda result, error: events.put((result, error)))
    try:
        grpc.async_stream_infer(
            "ticker", [grpc_input("TICKS", np.array([10_000], np.int32), "INT32")]
        )
        result, error = events.get(timeout=30)
        assert error is None
        pid = int(result.as_numpy("PID")[0])
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while True:
            result, error = events.get(timeout=max(0.1, deadline - time.monotonic()))
            if error is not None:
                break
        assert error.message() == "Stub process 'ticker_0' is not healthy."
    finally:
        grpc.stop_stream()
    wait_for(lambda: http.is_model_ready("ticker"))
    got = stream(grpc, [("ticker", "t", [grpc_input("TICKS", np.array([2], np.int32), "INT32")])])
    pids = {int(r.as_numpy("PID")[0]) for r in got["t"][:-1]}
    assert len(got["t"]) == 3 and len(pids) == 1 and pid not in pids


# -- nothing left behind ----------------------------------------------------------------------


def shm_entries() -> set[str]:
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


def test_nothing_left_after_exit_crash_or_kill(tmp_path: Path) -> None:
    before = shm_entries()
    repo = tmp_path / "repo"
    for name in ("add_sub", "crashy", "square", "big_identity"):
        shutil.copytree(REPO / name, repo / name)
    # A clean exit (SIGTERM) with a crash on the way: stubs finalize, nothing remains.
    server = ServerProcess([repo]).start()
    client = httpclient.InferenceServerClient(server.http_url)
    pids = stub_pids(server.process.pid)
    assert len(pids) == 4
    big = np.ones(2_000_000, np.float32)  # a one-off segment each way
    client.infer("big_identity", [http_input("IN", big, "FP32")])
    crashy(client, 0)
    error_of(lambda: crashy(client, -1))
    wait_for(lambda: client.is_model_ready("crashy"))
    pids += stub_pids(server.process.pid)
    assert server.stop(signal.SIGTERM) == 0
    assert "Cleaning up..." in server.log()  # add_sub's finalize() ran
    wait_for(lambda: not any(alive(pid) for pid in pids), timeout=10)
    # The server killed outright: its stubs notice and exit by themselves.
    server = ServerProcess([repo]).start()
    pids = stub_pids(server.process.pid)
    server.stop(signal.SIGKILL)
    wait_for(lambda: not any(alive(pid) for pid in pids), timeout=10)
    new = {name for name in shm_entries() - before
           if "trit" in name.lower() or "python" in name.lower()}
    assert not new


STUCK_FINALIZE = """
import time


class TritonPythonModel:
    def execute(self, requests):
        return []

    def finalize(self):
        while True:
            time.sleep(1)
"""


def test_a_stub_stuck_in_finalize_ends_with_the_server(tmp_path: Path) -> None:
    """The server gives up on it at the exit timeout and exits; the stub notices its parent
    is gone and ends too (Triton's stub checks every 300 ms), instead of running forever."""
    write_model(tmp_path, "stuck", 'backend: "python"\n'
                'input [ { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] } ]\n'
                'output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] } ]\n',
                files={"1/model.py": STUCK_FINALIZE})
    server = ServerProcess([tmp_path], "--exit-timeout-secs=2").start()
    [pid] = stub_pids(server.process.pid)
    server.stop(signal.SIGTERM)
    assert "Exit timeout expired" in server.log()
    wait_for(lambda: not alive(pid), timeout=10)
