"""Logs as a Triton user reads them: the start-up tables, each model's "successfully unloaded"
line at exit, the failures Triton logs (an exception in execute, a refused load request, a stub
that dies), verbose logging without libraries' chatter; and `tritium check`'s report."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support import ROOT
from support.models import write_model
from support.server_process import ServerProcess

CONFIG = '''
name: "{name}"
backend: "python"
max_batch_size: 0
input {{ name: "IN" data_type: TYPE_FP32 dims: [ 1 ] }}
output {{ name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] }}
'''
FAILING_MODEL = '''
import os

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            if x[0] == -99:
                os._exit(1)  # the stub dies
            if x[0] < 0:
                raise pb_utils.TritonModelException("negative input refused")
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", x)]))
        return responses
'''
BAD_INIT_MODEL = '''
class TritonPythonModel:
    def initialize(self, args):
        print("model chatter on stdout")
        raise ValueError("weights are missing")

    def execute(self, requests):
        return []
'''


def infer(module, url: str, value: float):
    client = module.InferenceServerClient(url)
    x = module.InferInput("IN", [1], "FP32")
    x.set_data_from_numpy(np.array([value], dtype=np.float32))
    return client.infer("failing", [x])


@pytest.fixture(scope="module")
def stopped_server(tmp_path_factory: pytest.TempPathFactory):
    """A server that was used, then stopped: its whole log."""
    repo = tmp_path_factory.mktemp("logs_repo")
    write_model(repo, "failing", CONFIG.format(name="failing"),
                files={"1/model.py": FAILING_MODEL})
    server = ServerProcess([repo], "--model-control-mode=explicit", "--load-model=failing",
                           "--log-verbose=1", "--exit-timeout-secs=7")
    with server:
        assert infer(httpclient, server.http_url, 1.0).as_numpy("OUT").tolist() == [1.0]
        assert infer(grpcclient, server.grpc_url, 2.0).as_numpy("OUT").tolist() == [2.0]
        with pytest.raises(InferenceServerException, match="negative input refused"):
            infer(httpclient, server.http_url, -1.0)
        with pytest.raises(InferenceServerException, match="failed to poll"):
            httpclient.InferenceServerClient(server.http_url).load_model("nosuch")
        with pytest.raises(InferenceServerException, match="failed to poll"):
            httpclient.InferenceServerClient(server.http_url).load_model(
                "failing", config='{"max_batch_size": "many"}')
        with pytest.raises(InferenceServerException, match="is not healthy"):
            infer(httpclient, server.http_url, -99.0)
        server.wait_log("Stub process 'failing_0' is not healthy.")
    return server.log()


def test_startup_tables(stopped_server: str) -> None:
    log = stopped_server
    assert "| Backend | Path" in log and "| python  |" in log
    assert "| failing | 1       | READY  |" in log
    rows = {line.split("|")[1].strip(): line.split("|")[2].strip()
            for line in log.splitlines() if line.startswith("| ") and line.count("|") == 3}
    assert rows["server_id"] == "triton"
    assert rows["model_control_mode"] == "MODE_EXPLICIT"
    assert rows["startup_models_0"] == "failing"
    assert rows["strict_readiness"] == "1" and rows["rate_limit"] == "OFF"
    assert rows["cache_enabled"] == "0" and rows["exit_timeout"] == "7"
    assert rows["min_supported_compute_capability"] == "6.0"
    assert rows["model_repository_path[0]"].endswith("logs_repo0")
    assert log.index("| Backend |") < log.index("| Model ") < log.index("| Option ") \
        < log.index("Started HTTPService")


def test_each_model_says_it_unloaded_at_exit(stopped_server: str) -> None:
    assert "successfully unloaded 'failing' version 1" in stopped_server
    # Once, as Triton's stop logs it (its L0_logging counts it).
    assert stopped_server.count("Waiting for in-flight requests to complete.") == 1


def test_failures_are_logged(stopped_server: str) -> None:
    errors = [line for line in stopped_server.splitlines() if line.startswith("E")]
    assert any("Failed to process the request(s) for model 'failing_0', message: "
               "TritonModelException: negative input refused" in line for line in errors), errors
    assert any("load request for 'nosuch' refused: no model folder of that name" in line
               for line in errors), errors
    # Triton's words, which its L0_grpc greps for.
    assert any("Poll failed for model directory 'failing': Invalid config override: " in line
               for line in errors), errors
    assert any("Stub process 'failing_0' is not healthy." in line for line in errors), errors


def test_verbose_log_has_no_library_chatter(stopped_server: str) -> None:
    assert "hpack" not in stopped_server
    assert "Encoding" not in stopped_server and "Decoding" not in stopped_server


def run_check(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "tritium", "check", *args], cwd=ROOT,
                          capture_output=True, check=False, text=True, timeout=120, env=env)


def test_check_reports_each_problem_once_from_its_file(tmp_path: Path) -> None:
    write_model(tmp_path, "bad_init", CONFIG.format(name="bad_init"),
                files={"1/model.py": BAD_INIT_MODEL})
    result = run_check(str(tmp_path))
    assert result.returncode == 1
    model_file = tmp_path / "bad_init" / "1" / "model.py"
    assert result.stdout.startswith(f"bad_init version 1: INVALID ({model_file}:5): "
                                    "ValueError: weights are missing")
    assert result.stdout.count("weights are missing") == 1
    assert "weights are missing" not in result.stderr
    assert "model chatter on stdout" not in result.stdout
    assert "model chatter on stdout" in result.stderr


def test_the_example_repository_checks_clean_as_the_cli_page_shows() -> None:
    result = run_check("examples/model_repository", "--backend-directory", "examples/backends")
    assert result.returncode == 0, result.stdout + result.stderr
    verdicts = [line for line in result.stdout.splitlines() if line.endswith(": OK")
                or ": INVALID" in line]
    assert verdicts == ["add_sub: OK", "identity_bytes: OK", "identity_fp32: OK", "simple: OK"]
    cli_page = (ROOT / "docs" / "cli.md").read_text()
    assert "tritium check examples/model_repository --backend-directory examples/backends" \
        in cli_page
