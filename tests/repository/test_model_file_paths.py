"""Every file a model configuration names stays inside the model's folder (or the backend
directories): a load request's `config` override, or a config.pbtxt, naming one elsewhere fails
the load with INVALID_ARG naming the field, and nothing outside is imported or run (Triton 2.51
imports the file)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import tritonclient.http as httpclient

from support.models import write_model
from support.raw_http import post
from support.server_process import ServerProcess

PLANTED = """
import pathlib
pathlib.Path(__file__).with_name("planted_ran").write_text("imported")
"""
MODEL = """
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.zeros(1, np.float32))])
                for _ in requests]
"""
IO = {"input": [{"name": "IN", "data_type": "TYPE_FP32", "dims": [1]}],
      "output": [{"name": "OUT", "data_type": "TYPE_FP32", "dims": [1]}]}


def _config(**fields) -> dict:
    return {"backend": "python", "max_batch_size": 0, **IO, **fields}


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("paths")
    repo = root / "repo"
    write_model(repo, "pymodel", None, files={"1/model.py": MODEL, "1/other.py": MODEL})
    (root / "planted.py").write_text(PLANTED)  # outside the repository
    (repo / "planted.py").write_text(PLANTED)  # in the repository, outside the model
    return {"root": root, "repo": repo}


@pytest.fixture(scope="module")
def server(layout: dict[str, Path]):
    with ServerProcess([layout["repo"]], "--model-control-mode=explicit") as process:
        yield process


def _load(server: ServerProcess, config: dict):
    return post(server, "/v2/repository/models/pymodel/load",
                {"parameters": {"config": json.dumps(config)}})


@pytest.mark.parametrize("fields, field, value", [
    ({"default_model_filename": "../../../planted.py"}, "default_model_filename",
     "../../../planted.py"),
    ({"default_model_filename": "../../planted.py"}, "default_model_filename",
     "../../planted.py"),
    ({"default_model_filename": "{root}/planted.py"}, "default_model_filename",
     "{root}/planted.py"),
    ({"cc_model_filenames": {"8.0": "../../planted.py"}}, "cc_model_filenames['8.0']",
     "../../planted.py"),
    ({"parameters": {"EXECUTION_ENV_PATH": {"string_value": "$$TRITON_MODEL_DIRECTORY/../.."}}},
     "parameters['EXECUTION_ENV_PATH']", "$$TRITON_MODEL_DIRECTORY/../.."),
    ({"parameters": {"EXECUTION_ENV_PATH": {"string_value": sys.prefix}}},
     "parameters['EXECUTION_ENV_PATH']", sys.prefix),
])
def test_a_path_out_of_the_model_fails_the_load(server, layout, fields, field, value) -> None:
    root = str(layout["root"])
    fields = json.loads(json.dumps(fields).replace("{root}", root))
    reply = _load(server, _config(**fields))
    assert reply.status == 400
    expected = "a path inside the model's folder" + (
        "" if field.startswith(("default", "cc_")) else " or a backend directory")
    assert (f"model 'pymodel': {field} '{value.replace('{root}', root)}' is not allowed; it must "
            f"be {expected}") in reply.error
    assert not (layout["root"] / "planted_ran").exists()
    assert not (layout["repo"] / "planted_ran").exists()


def test_a_runtime_out_of_the_model_fails_the_load_in_tritons_words(server, layout) -> None:
    root = layout["root"]
    reply = _load(server, _config(runtime=f"{root}/planted.py"))
    assert reply.status == 400
    assert (f"backend library name '{root}/planted.py' escapes backend directory "
            f"'{layout['repo']}/pymodel', for model 'pymodel', check model config runtime "
            f"field") in reply.error
    assert not (root / "planted_ran").exists()


@pytest.mark.parametrize("label", ["../../planted.py", "labels\0.txt"])
def test_a_label_file_out_of_the_model_fails_the_load(server, label) -> None:
    """(A NUL byte answered "ValueError: embedded null byte".)"""
    outputs = [{**IO["output"][0], "label_filename": label}]
    reply = _load(server, {**_config(), "output": outputs})
    assert reply.status == 400
    assert f"label file '{label}' of output 'OUT' is outside the model directory" in reply.error


def test_backend_as_a_path_fails_the_load(server, layout) -> None:
    reply = _load(server, _config(backend=f"{layout['root']}/planted"))
    assert reply.status == 400
    assert (f"backend '{layout['root']}/planted' is not allowed; it must be a backend's name, "
            "not a path") in reply.error


def test_paths_inside_the_model_still_load(server) -> None:
    reply = _load(server, _config(default_model_filename="other.py"))
    assert reply.status == 200, reply.text
    assert httpclient.InferenceServerClient(server.http_url).is_model_ready("pymodel")


def test_a_config_file_naming_a_path_out_fails_at_startup(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_model(repo, "pymodel",
                'backend: "python"\ndefault_model_filename: "../../planted.py"\n',
                files={"1/model.py": MODEL})
    (tmp_path / "planted.py").write_text(PLANTED)
    with ServerProcess([repo], "--exit-on-error=false", "--strict-readiness=false") as process:
        index = httpclient.InferenceServerClient(process.http_url).get_model_repository_index()
    (entry,) = index
    assert entry["state"] == "UNAVAILABLE"
    assert "default_model_filename '../../planted.py' is not allowed" in entry["reason"]
    assert not (tmp_path / "planted_ran").exists()
