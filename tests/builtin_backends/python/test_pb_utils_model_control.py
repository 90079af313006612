"""`pb_utils.load_model`, `unload_model` and `is_model_ready` from inside a Python model go
through the server's repository API: the same loads, overrides, refusals and states a client
of the repository extension gets."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tritonclient.http as httpclient

from support.models import identity_config, write_model
from support.server_process import ServerProcess

MANAGER_PY = '''
import json
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """CMD is "<verb> <json args>"; RESULT is what pb_utils answered, or the error text."""

    def execute(self, requests):
        responses = []
        for request in requests:
            text = pb_utils.get_input_tensor_by_name(request, "CMD").as_numpy()[0].decode()
            verb, _, args = text.partition(" ")
            args = json.loads(args)
            try:
                if verb == "load":
                    files = {k: v.encode() for k, v in args.get("files", {}).items()}
                    pb_utils.load_model(args["name"], config=args.get("config", ""), files=files)
                    result = "ok"
                elif verb == "unload":
                    pb_utils.unload_model(
                        args["name"], unload_dependents=args.get("dependents", False)
                    )
                    result = "ok"
                else:
                    result = str(pb_utils.is_model_ready(args["name"], args.get("version", "")))
            except pb_utils.TritonModelException as exc:
                result = "error: " + str(exc)
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor("RESULT", np.array([result.encode()], np.object_))]))
        return responses
'''

MANAGER_CONFIG = '''
name: "manager"
backend: "python"
max_batch_size: 0
input [ { name: "CMD" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "RESULT" data_type: TYPE_STRING dims: [ 1 ] } ]
'''

PLUS1_PY = """
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy() + 1)]) for r in requests]
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp("pbcontrol")
    write_model(repo, "manager", MANAGER_CONFIG, files={"1/model.py": MANAGER_PY})
    write_model(repo, "target", identity_config("target"))
    with ServerProcess([repo], "--model-control-mode=explicit", "--load-model=manager") as p:
        yield p


def command(server: ServerProcess, verb: str, **args: object) -> str:
    client = httpclient.InferenceServerClient(server.http_url, network_timeout=120)
    tensor = httpclient.InferInput("CMD", [1], "BYTES")
    tensor.set_data_from_numpy(np.array([f"{verb} {json.dumps(args)}".encode()], np.object_))
    result = client.infer("manager", [tensor]).as_numpy("RESULT")[0]
    return result.decode()


def test_load_and_unload_a_repository_model(server: ServerProcess) -> None:
    client = httpclient.InferenceServerClient(server.http_url)
    assert command(server, "ready", name="target") == "False"
    assert command(server, "load", name="target") == "ok"
    assert client.is_model_ready("target")
    assert command(server, "ready", name="target", version="1") == "True"
    assert command(server, "unload", name="target") == "ok"
    assert not client.is_model_ready("target")
    assert command(server, "ready", name="target") == "False"


def test_load_with_config_and_files(server: ServerProcess) -> None:
    config = json.dumps({
        "backend": "python", "max_batch_size": 0,
        "input": [{"name": "IN", "data_type": "TYPE_INT32", "dims": [1]}],
        "output": [{"name": "OUT", "data_type": "TYPE_INT32", "dims": [1]}]})
    assert command(server, "load", name="made", config=config,
                   files={"file:1/model.py": PLUS1_PY}) == "ok"
    client = httpclient.InferenceServerClient(server.http_url)
    tensor = httpclient.InferInput("IN", [1], "INT32")
    tensor.set_data_from_numpy(np.array([9], np.int32))
    assert client.infer("made", [tensor]).as_numpy("OUT").tolist() == [10]
    assert command(server, "unload", name="made", dependents=True) == "ok"
    assert not client.is_model_ready("made")


def test_errors_reach_the_model_with_the_servers_message(server: ServerProcess) -> None:
    assert command(server, "load", name="nothere") == (
        "error: Failed to load model: failed to load 'nothere', failed to poll from model "
        "repository")
    assert command(server, "load", name="../manager") == (
        "error: Failed to load model: invalid model name '../manager'")
    assert command(server, "load", name="x", config="{}",
                   files={"file:../x.py": "evil"}) == (
        "error: Failed to load model: failed to load 'x', invalid file override 'file:../x.py': "
        "the path must stay inside the model directory")
