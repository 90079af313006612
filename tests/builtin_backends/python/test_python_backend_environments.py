"""The python backend beyond plain models: Python-based backends, execution environments, and the
README's example add_sub model.
The models live in tests/support/python_models/ (repo/: one per behaviour; backends/ +
pybased_repo/: a Python-based backend; bad_repo/: a model whose initialize fails; env_model/: a
model run in an execution environment). Every test drives a real server process with tritonclient.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient

from support import ROOT
from support.python_backend_fixtures import MODELS, add_sub_inputs, http_input
from support.server_process import ServerProcess

# -- Python-based backends, execution environments --------------------------------------------


def test_python_based_backend_serves_every_model_naming_it() -> None:
    repo = MODELS / "pybased_repo"
    with ServerProcess([repo], f"--backend-directory={MODELS / 'backends'}") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        a = np.array([1.0, 2.0], np.float32)
        b = np.array([0.5, 0.5], np.float32)
        inputs = [http_input("A", a, "FP32"), http_input("B", b, "FP32")]
        plain = client.infer("adder", inputs)
        np.testing.assert_allclose(plain.as_numpy("SUM"), [1.5, 2.5])
        assert plain.as_numpy("NAME").tolist() == [b"adder"]
        scaled = client.infer("scaled_adder", inputs)
        np.testing.assert_allclose(scaled.as_numpy("SUM"), [15.0, 25.0])
        assert scaled.as_numpy("NAME").tolist() == [b"scaled_adder"]
        assert client.get_model_config("adder")["backend"] == "pyadd"


# A Python-based backend named after a library its model.py imports, as Triton's vLLM backend
# (backends/vllm/model.py imports vllm) is, with a helper module beside it.
_NAMESAKE = """
import json

import numpy as np
import triton_python_backend_utils as pb_utils
from helpers import describe


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array(
            [json.dumps(describe(pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()))],
            np.object_))]) for r in requests]
"""


def test_a_backend_named_after_a_library_its_model_imports(tmp_path: Path) -> None:
    backend = tmp_path / "backends" / "json"
    backend.mkdir(parents=True)
    (backend / "model.py").write_text(_NAMESAKE)
    (backend / "helpers.py").write_text(
        "def describe(array):\n    return {'sum': int(array.sum()), 'module': __name__}\n")
    model = tmp_path / "repo" / "namesake"
    (model / "1").mkdir(parents=True)
    (model / "config.pbtxt").write_text(
        'backend: "json"\nmax_batch_size: 0\n'
        'input [ { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] } ]\n'
        'output [ { name: "OUT" data_type: TYPE_STRING dims: [ 1 ] } ]\n')
    with ServerProcess([tmp_path / "repo"], f"--backend-directory={tmp_path / 'backends'}"
                       ) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        result = client.infer("namesake", [http_input("IN", np.arange(4, dtype=np.int32),
                                                      "INT32")])
    assert result.as_numpy("OUT")[0].decode() == '{"sum": 6, "module": "helpers"}'


def _environment(venv: Path) -> None:
    """An execution environment: a venv of the base interpreter that finds numpy (the stub's
    one dependency) where this test run's does, and nothing of Tritium's."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True)
    (site,) = venv.glob("lib/python3*/site-packages")
    (site / "numpy_from_the_test_run.pth").write_text(str(Path(np.__file__).parent.parent))


def test_execution_environment_runs_the_model_with_its_python(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(MODELS / "env_model", repo / "env_model")
    venv = repo / "env_model" / "venv"
    _environment(venv)
    with ServerProcess([repo]) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        result = client.infer("env_model", [http_input("IN", np.array([1], np.int32), "INT32")])
        assert result.as_numpy("PREFIX")[0].decode() == str(venv)


def test_execution_environment_from_an_archive(tmp_path: Path) -> None:
    import tarfile

    repo = tmp_path / "repo"
    shutil.copytree(MODELS / "env_model", repo / "env_model")
    venv = tmp_path / "venv"
    _environment(venv)
    with tarfile.open(repo / "env_model" / "env.tar.gz", "w:gz") as archive:
        archive.add(venv, arcname=".")
    config = repo / "env_model" / "config.pbtxt"
    config.write_text(config.read_text().replace("/venv", "/env.tar.gz"))
    with ServerProcess([repo]) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        result = client.infer("env_model", [http_input("IN", np.array([1], np.int32), "INT32")])
        prefix = Path(result.as_numpy("PREFIX")[0].decode())
        assert prefix.name.startswith("tritium_python_env_")
        assert prefix.exists()
    assert not prefix.exists()  # unpacked for the model, removed with it


def test_missing_execution_environment_fails_the_load(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(MODELS / "env_model", repo / "env_model")
    server = ServerProcess([repo])
    with pytest.raises(RuntimeError):
        server.start()
    assert "EXECUTION_ENV_PATH '$$TRITON_MODEL_DIRECTORY/venv'" in server.log()


def test_the_example_add_sub_model() -> None:
    root = ROOT / "examples"
    with ServerProcess([root / "model_repository"],
                       f"--backend-directory={root / 'backends'}") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        result = client.infer("add_sub", add_sub_inputs())
        np.testing.assert_allclose(result.as_numpy("OUTPUT0"), np.arange(4) + 0.5)
        np.testing.assert_allclose(result.as_numpy("OUTPUT1"), np.arange(4) - 0.5)
