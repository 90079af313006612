"""The backend API as a backend author uses it: auto-complete, attributes, errors, policies."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support import ROOT
from support.models import write_model
from support.server_process import ServerProcess

AUTOFILL_BACKEND = '''
from tritonclient.grpc import model_config_pb2 as mc
from tritium.backend import ModelInstanceState, ModelState, TritonError

def get_backend_attribute(backend, attributes):
    attributes.add_preferred_instance_group("KIND_CPU", 3)

def model_initialize(model):
    if model.auto_complete:
        config = mc.ModelConfig()
        config.CopyFrom(model.config)
        if not config.input:
            config.max_batch_size = 4
            config.input.add(name="X", data_type=mc.TYPE_INT64, dims=[3])
            config.output.add(name="Y", data_type=mc.TYPE_INT64, dims=[3])
        model.set_config(config)
    ModelState.create(model)

class Double(ModelInstanceState):
    def execute(self, inputs):
        x = inputs["X"]
        if (x < 0).any():
            raise TritonError.invalid_arg("negative values are not allowed")
        if (x == 99).any():
            raise RuntimeError("backend crashed on 99")
        return {"Y": x * 2}

def model_instance_initialize(instance):
    Double.create(instance)

def model_instance_execute(instance, requests):
    if any(int(r.inputs["X"].data.reshape(-1)[0]) == 7 for r in requests):
        return  # forgets to respond
    instance.state.process_requests(requests)
'''


@pytest.fixture()
def autofill_setup(tmp_path: Path) -> tuple[Path, Path]:
    backends, repo = tmp_path / "backends", tmp_path / "repo"
    (backends / "autofill").mkdir(parents=True)
    (backends / "autofill" / "backend.py").write_text(AUTOFILL_BACKEND)
    write_model(repo, "doubler", 'backend: "autofill"\n')
    return backends, repo


def check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tritium", "check", *args], capture_output=True,
                          text=True, timeout=120, env={"PYTHONPATH": str(ROOT / "src")})


def test_backend_auto_completes_config_and_prefers_instance_groups(autofill_setup) -> None:
    backends, repo = autofill_setup
    with ServerProcess([repo], f"--backend-directory={backends}") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        config = client.get_model_config("doubler")
        assert config["max_batch_size"] == 4
        assert [i["name"] for i in config["input"]] == ["X"]
        assert config["input"][0]["data_type"] == "TYPE_INT64"
        assert config["instance_group"][0]["count"] == 3
        assert config["instance_group"][0]["kind"] == "KIND_CPU"
        x = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int64)
        inp = httpclient.InferInput("X", [2, 3], "INT64")
        inp.set_data_from_numpy(x)
        np.testing.assert_array_equal(client.infer("doubler", [inp]).as_numpy("Y"), x * 2)


def test_disabled_auto_complete_leaves_config_as_written(autofill_setup) -> None:
    backends, repo = autofill_setup
    with ServerProcess([repo], f"--backend-directory={backends}",
                       "--disable-auto-complete-config") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        # The backend saw auto_complete=False and filled nothing in (Triton allows a model
        # without inputs, so it still loads).
        config = client.get_model_config("doubler")
        assert config["input"] == [] and config["output"] == []
        assert config["max_batch_size"] == 0


def test_backend_errors_reach_the_client_and_server_keeps_serving(autofill_setup) -> None:
    backends, repo = autofill_setup
    with ServerProcess([repo], f"--backend-directory={backends}") as server:
        client = httpclient.InferenceServerClient(server.http_url)

        def call(values: list[int]) -> np.ndarray:
            inp = httpclient.InferInput("X", [1, 3], "INT64")
            inp.set_data_from_numpy(np.array([values], dtype=np.int64))
            return client.infer("doubler", [inp]).as_numpy("Y")

        with pytest.raises(InferenceServerException) as info:
            call([-1, 0, 0])
        assert "negative values are not allowed" in info.value.message()
        assert info.value.status() == "400"
        with pytest.raises(InferenceServerException) as info:
            call([99, 0, 0])
        assert "backend crashed on 99" in info.value.message()
        assert info.value.status() == "500"
        with pytest.raises(InferenceServerException) as info:
            call([7, 0, 0])
        assert "without sending a response" in info.value.message()
        np.testing.assert_array_equal(call([1, 1, 1]), [[2, 2, 2]])
        import urllib.request

        metrics = urllib.request.urlopen(server.metrics_url).read().decode()
        # Triton's exposition: failures by reason (all three reached the backend), integers.
        assert 'nv_inference_request_failure{model="doubler",reason="BACKEND",version="1"} 3' \
            in metrics.splitlines()
        assert 'nv_inference_request_success{model="doubler",version="1"} 1' in metrics.splitlines()


def test_check_shows_backend_completion(autofill_setup) -> None:
    backends, repo = autofill_setup
    result = check(str(repo), "--json")
    # Without --backend-directory the backend cannot be found: a precise error, non-zero exit.
    assert result.returncode == 1
    assert "unable to find backend library for backend 'autofill'" in result.stdout
    result = check(str(repo), f"--backend-directory={backends}", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    completed = json.loads(result.stdout.split("doubler: OK\n", 1)[1])
    assert completed["max_batch_size"] == 4
    assert completed["output"][0]["name"] == "Y"
    assert completed["instance_group"][0]["count"] == 3


def test_device_blocking_shares_one_thread_per_device() -> None:
    from tritium.backend.handles import ExecutionPolicy
    from tritium.scheduler.slot_threads import execution_slots

    class FakeInstance:
        def __init__(self, kind: str, device: int) -> None:
            self.handle = type("H", (), {"kind": kind, "device_id": device})()

    instances = [
        FakeInstance("KIND_GPU", 0), FakeInstance("KIND_GPU", 0), FakeInstance("KIND_GPU", 1)
    ]
    assert [len(s) for s in execution_slots(instances, ExecutionPolicy.BLOCKING)] == [1, 1, 1]
    slots = execution_slots(instances, ExecutionPolicy.DEVICE_BLOCKING)
    assert sorted(len(s) for s in slots) == [1, 2]
