"""Start-up, model life cycle, backend plugins and graceful shutdown, seen from outside."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support import ROOT
from support.models import identity_config, write_model
from support.raw_http import call, post
from support.server_process import ServerProcess

ORDER_BACKEND = """
import os
from tritium.backend import ModelInstanceState, ModelState

LOG = os.environ["ORDER_LOG"]

def record(event):
    with open(LOG, "a") as f:
        f.write(event + "\\n")

def initialize(backend):
    record("initialize " + backend.config.get("greeting", "-"))

def finalize(backend):
    record("finalize")

def model_initialize(model):
    ModelState.create(model)
    record("model_initialize " + model.name)

def model_finalize(model):
    record("model_finalize " + model.name)

class Echo(ModelInstanceState):
    def execute(self, inputs):
        return {"OUTPUT0": inputs["INPUT0"]}

def model_instance_initialize(instance):
    Echo.create(instance)
    record("model_instance_initialize " + instance.name)

def model_instance_finalize(instance):
    record("model_instance_finalize " + instance.name)

def model_instance_execute(instance, requests):
    instance.state.process_requests(requests)
"""


def infer_fp32(client: httpclient.InferenceServerClient, model: str, values: list[float]):
    data = np.array([values], dtype=np.float32)
    inp = httpclient.InferInput("INPUT0", list(data.shape), "FP32")
    inp.set_data_from_numpy(data)
    return client.infer(model, [inp]).as_numpy("OUTPUT0")


def test_failed_model_does_not_stop_the_others(tmp_path: Path) -> None:
    write_model(tmp_path, "good", identity_config("good"))
    write_model(tmp_path, "bad", 'name: "bad"\nbackend: "identity"\nmax_batch_size: -3\n')
    with ServerProcess([tmp_path], "--exit-on-error=false") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.is_model_ready("good")
        assert not client.is_model_ready("bad")
        np.testing.assert_array_equal(infer_fp32(client, "good", [1.5, 2.5]), [[1.5, 2.5]])
        # As in Triton, a model whose configuration is invalid is not added: the log says why,
        # and it takes no part in (strict) readiness.
        assert client.is_server_ready()
        with pytest.raises(InferenceServerException) as info:
            infer_fp32(client, "bad", [1.0])
        assert info.value.message() == "Request for unknown model: 'bad' is not found"
        assert client.get_model_repository_index() == [
            {"name": "bad"}, {"name": "good", "version": "1", "state": "READY"}]
        assert [m for m in server.log_messages() if "'bad'" in m] == [
            "Poll failed for model directory 'bad': 'max_batch_size' must be non-negative value "
            "for bad"]
        table = server.log()
        assert "| good " in table and "READY" in table
        assert "| bad " not in table


def test_runtime_and_missing_configurations_fail_as_in_triton(tmp_path: Path) -> None:
    write_model(tmp_path, "bad_runtime", identity_config("bad_runtime").replace(
        'backend: "identity"', 'backend: "identity"\nruntime: "__invalid_runtime__"'))
    # No configuration file: the backend must give the model one. Triton's identity does not,
    # Triton's python backend does.
    write_model(tmp_path, "bare.identity", None)
    write_model(tmp_path, "bare_python", None, files={"1/model.py": (
        "class TritonPythonModel:\n    def execute(self, requests):\n        return []\n")})
    with ServerProcess([tmp_path], "--exit-on-error=false") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.is_model_ready("bare_python")
        assert not client.is_model_ready("bad_runtime")
        assert not client.is_model_ready("bare.identity")
        messages = "\n".join(server.log_messages())
        assert ("unable to find backend library '__invalid_runtime__' for model 'bad_runtime', "
                "searched: ") in messages
        assert "Not found: model configuration is not provided for model 'bare.identity'" \
            in messages


def test_a_bad_configuration_still_stops_a_server_that_exits_on_error(tmp_path: Path) -> None:
    write_model(tmp_path, "good", identity_config("good"))
    write_model(tmp_path, "bad", 'name: "bad"\nbackend: "identity"\nmax_batch_size: -3\n')
    server = ServerProcess([tmp_path]).start(wait_ready=False)
    assert server.wait_exit(60) != 0
    assert "failed to load all models" in server.log()


def test_strict_readiness_reports_not_ready_when_a_model_failed(tmp_path: Path) -> None:
    write_model(tmp_path, "good", identity_config("good"))
    write_model(tmp_path, "bad", 'name: "bad"\nbackend: "nosuchbackend"\n')
    with ServerProcess([tmp_path], "--exit-on-error=false") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.is_server_live()
        assert not client.is_server_ready()
        assert ("unable to find backend library for backend 'nosuchbackend', try specifying "
                "runtime on the model configuration.") in server.log()


def test_exit_on_error_is_the_default(tmp_path: Path) -> None:
    write_model(tmp_path, "good", identity_config("good"))
    write_model(tmp_path, "bad", 'name: "bad"\nbackend: "nosuchbackend"\n')
    server = ServerProcess([tmp_path]).start(wait_ready=False)
    assert server.wait_exit(60) != 0
    log = server.log()
    assert "failed to load all models" in log
    assert "| bad " in log


def test_duplicate_model_name_fails_only_that_model(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    write_model(first, "twice", identity_config("twice"))
    write_model(second, "twice", identity_config("twice"))
    write_model(second, "once", identity_config("once"))
    with ServerProcess([first, second], "--exit-on-error=false",
                       "--model-control-mode=explicit", "--load-model=*") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.is_model_ready("once")
        assert not client.is_model_ready("twice")
        why = "failed to poll model 'twice': not unique across all model repositories"
        assert server.log_messages().count(why) == 1
        # The index shows it as Triton's does, even ready-only.
        duplicate = {"name": "twice", "state": "UNAVAILABLE",
                     "reason": "model appears in two or more repositories"}
        assert duplicate in client.get_model_repository_index()
        status, body = post(server, "/v2/repository/index", raw=b'{"ready": true}') \
            .status_and_text()
        assert status == 200 and duplicate in json.loads(body)
        # Loading it again: Triton's answer, and the log says why.
        with pytest.raises(InferenceServerException) as failed:
            client.load_model("twice")
        assert failed.value.message() == (
            "failed to load 'twice', failed to poll from model repository")
        assert server.log_messages().count(why) == 2


def test_explicit_mode_loads_only_named_models(tmp_path: Path) -> None:
    for name in ("one", "two", "three"):
        write_model(tmp_path, name, identity_config(name))
    with ServerProcess([tmp_path], "--model-control-mode=explicit", "--load-model", "one",
                       "--load-model=three") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.is_model_ready("one") and client.is_model_ready("three")
        assert not client.is_model_ready("two")


def test_explicit_mode_star_loads_everything(tmp_path: Path) -> None:
    for name in ("one", "two"):
        write_model(tmp_path, name, identity_config(name))
    with ServerProcess([tmp_path], "--model-control-mode", "explicit", "--load-model=*") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.is_model_ready("one") and client.is_model_ready("two")


def test_version_policy_latest_two(tmp_path: Path) -> None:
    policy = "version_policy: { latest: { num_versions: 2 } }"
    write_model(tmp_path, "m", identity_config("m", extra=policy), versions=(1, 2, 3))
    (tmp_path / "m" / "notaversion").mkdir()
    (tmp_path / "m" / "007").mkdir()
    with ServerProcess([tmp_path]) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.is_model_ready("m", "3") and client.is_model_ready("m", "2")
        assert not client.is_model_ready("m", "1")
        assert client.get_model_metadata("m")["versions"] == ["2", "3"]


def test_custom_backend_lifecycle_and_graceful_shutdown_order(tmp_path: Path) -> None:
    backends, repo = tmp_path / "backends", tmp_path / "repo"
    (backends / "order").mkdir(parents=True)
    (backends / "order" / "backend.py").write_text(ORDER_BACKEND)
    write_model(repo, "echo", identity_config(
        "echo", extra='backend: "order"\ninstance_group [ { kind: KIND_CPU count: 2 } ]'
    ).replace('backend: "identity"\n', ""))
    log = tmp_path / "order.log"
    server = ServerProcess([repo], f"--backend-directory={backends}",
                           "--backend-config=order,greeting=hello", env={"ORDER_LOG": str(log)})
    with server:
        client = httpclient.InferenceServerClient(server.http_url)
        np.testing.assert_array_equal(infer_fp32(client, "echo", [7.0]), [[7.0]])
        assert server.stop(signal.SIGTERM) == 0
    events = log.read_text().splitlines()
    assert events[0] == "initialize hello"
    assert events[1] == "model_initialize echo"
    assert sorted(events[2:4]) == ["model_instance_initialize echo_0_0",
                                   "model_instance_initialize echo_0_1"]
    assert sorted(events[4:6]) == ["model_instance_finalize echo_0_0",
                                   "model_instance_finalize echo_0_1"]
    assert events[6:] == ["model_finalize echo", "finalize"]


SLOW_MODEL = """
import time
from pathlib import Path

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.started = Path(args["model_repository"]) / "started"

    def execute(self, requests):
        self.started.touch()  # the test sends SIGTERM once the execution has begun
        time.sleep(1.5)
        return [pb_utils.InferenceResponse(
            [pb_utils.Tensor("OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())])
            for r in requests]
"""


def test_sigterm_lets_in_flight_requests_finish(tmp_path: Path) -> None:
    """An execution under way when SIGTERM comes is answered (a request still queued then is
    failed UNAVAILABLE: the test waits until the model has begun executing)."""
    config = identity_config("slow").replace('backend: "identity"', 'backend: "python"')
    write_model(tmp_path, "slow", config, files={"1/model.py": SLOW_MODEL})
    server = ServerProcess([tmp_path]).start()
    client = httpclient.InferenceServerClient(server.http_url, network_timeout=30)
    outcome: dict = {}

    def call() -> None:
        try:
            outcome["value"] = infer_fp32(client, "slow", [3.0])
        except Exception as exc:  # reported below
            outcome["error"] = exc

    thread = threading.Thread(target=call)
    thread.start()
    started = tmp_path / "slow" / "started"
    deadline = time.monotonic() + 30
    while not started.exists():
        assert time.monotonic() < deadline, "the execution never began"
        time.sleep(0.01)
    assert server.process is not None
    server.process.send_signal(signal.SIGTERM)
    thread.join()
    client.close()  # as Triton's, the server serves an open HTTP connection until it is closed
    assert server.wait_exit(30) == 0
    error = outcome.get("error")
    assert error is None, str(error)
    np.testing.assert_array_equal(outcome["value"], [[3.0]])


def run_check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tritium", "check", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})


def test_check_prints_completed_config_and_succeeds(tmp_path: Path) -> None:
    write_model(tmp_path, "fine", 'backend: "identity"\nmax_batch_size: 4\n'
                'input { name: "INPUT0" data_type: TYPE_FP32 dims: [ 2 ] }\n'
                'output { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 2 ] }\n')
    result = run_check(str(tmp_path), "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "fine: OK" in result.stdout
    assert '"name": "fine"' in result.stdout
    assert '"kind": "KIND_CPU"' in result.stdout  # the completed instance group


def test_check_reports_syntax_error_with_file_and_line(tmp_path: Path) -> None:
    write_model(tmp_path, "fine", identity_config("fine"))
    write_model(tmp_path, "broken", 'name: "broken"\nbackend: "identity"\nmax_batch_size: [\n')
    result = run_check(str(tmp_path))
    assert result.returncode == 1
    assert "fine: OK" in result.stdout
    line = next(text for text in result.stdout.splitlines() if text.startswith("broken"))
    assert "config.pbtxt" in line and ":3:" in line


def test_a_missing_repository_without_exit_on_error_serves_not_live(tmp_path: Path) -> None:
    """As Triton: the start fails, but with --exit-on-error=false the server goes on, neither
    live nor ready, and its frontends answer health and metadata."""
    server = ServerProcess([tmp_path / "absent"], "--exit-on-error=false").start(
        wait_ready=False)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                reply = call(server, "GET", "/v2", timeout=5)
                break
            except OSError:
                assert server.process is not None and server.process.poll() is None, server.log()
                assert time.monotonic() < deadline, server.log()
                time.sleep(0.1)
        assert reply.status == 200 and reply.json()["name"] == "triton"
        assert call(server, "GET", "/v2/health/live", timeout=5).status == 400
        assert call(server, "GET", "/v2/health/ready", timeout=5).status == 400
        assert any("failed to stat file" in m and "absent" in m for m in server.log_messages())
    finally:
        server.stop()
