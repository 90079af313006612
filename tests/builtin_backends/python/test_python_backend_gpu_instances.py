"""A python model on KIND_GPU, on a machine without a GPU: a server whose NVML answers from
probes recorded on a real H200 places the instances, and the model's initialize() gets
`model_instance_kind` "GPU" and `model_instance_device_id` as strings, as Triton gives them. The
stub needs no CUDA binding to run a model that does no CUDA work. A model answering with a
"CUDA" tensor (a stand-in that shows pb_utils what a cupy array shows it) reaches the client,
copied to the host once by the stub."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from support import PYTHON_MODELS
from support.gpu import fake_gpu_env, write_probe
from support.models import write_model
from support.server_process import ServerProcess

MODEL_PY = (PYTHON_MODELS / "gpu" / "instance_args.py").read_text()
STAND_IN_PY = (PYTHON_MODELS / "gpu" / "stand_in_gpu.py").read_text()


def stand_in_config(name: str, answer_by: str) -> str:
    return f"""
        name: "{name}"
        backend: "python"
        max_batch_size: 0
        input [ {{ name: "IN" data_type: TYPE_FP32 dims: [ 2, 3 ] }} ]
        output [ {{ name: "OUT" data_type: TYPE_FP32 dims: [ 2, 3 ] }},
                 {{ name: "CHECKS" data_type: TYPE_STRING dims: [ 1 ] }} ]
        instance_group [ {{ kind: KIND_GPU }} ]
        parameters {{ key: "ANSWER_BY" value: {{ string_value: "{answer_by}" }} }}
    """


def args_config(name: str, group: str) -> str:
    return f"""
        name: "{name}"
        backend: "python"
        max_batch_size: 0
        input [ {{ name: "IN" data_type: TYPE_INT32 dims: [ 1 ] }} ]
        output [ {{ name: "ARGS" data_type: TYPE_STRING dims: [ 1 ] }} ]
        instance_group [ {group} ]
    """


def instance_args(url: str, name: str, protocol: str) -> dict:
    client: httpclient.InferenceServerClient | grpcclient.InferenceServerClient
    module = httpclient if protocol == "http" else grpcclient
    client = module.InferenceServerClient(url)
    tensor = module.InferInput("IN", [1], "INT32")
    tensor.set_data_from_numpy(np.array([1], dtype=np.int32))
    result = client.infer(name, [tensor])
    return json.loads(result.as_numpy("ARGS")[0])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("gpu_args")
    repo = tmp / "repo"
    for name, group in [
        ("on_gpu", "{ kind: KIND_GPU gpus: [ 0 ] }"),
        ("on_second_gpu", "{ kind: KIND_GPU gpus: [ 1 ] }"),
        ("on_cpu", "{ kind: KIND_CPU }"),
        ("on_model", "{ kind: KIND_MODEL }"),
    ]:
        write_model(repo, name, args_config(name, group), files={"1/model.py": MODEL_PY})
    for answer_by in ("return", "sender"):
        name = f"stand_in_{answer_by}"
        write_model(repo, name, stand_in_config(name, answer_by),
                    files={"1/model.py": STAND_IN_PY})
    probe = write_probe(tmp / "probe.json", [(9, 0), (9, 0)])
    with ServerProcess([repo], "--log-verbose=1", env=fake_gpu_env(probe)) as process:
        yield process


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_gpu_instance_gets_kind_and_device_id_as_triton_gives_them(server: ServerProcess,
                                                                   protocol: str) -> None:
    url = server.http_url if protocol == "http" else server.grpc_url
    answer = instance_args(url, "on_gpu", protocol)
    assert answer["model_instance_kind"] == ["str", "GPU"]
    assert answer["model_instance_device_id"] == ["str", "0"]
    assert answer["model_instance_name"] == ["str", "on_gpu_0_0"]
    # Nothing CUDA was imported for a model that does no CUDA work.
    assert answer["cuda_modules"] == []


def test_gpu_instance_on_the_gpu_its_group_names(server: ServerProcess) -> None:
    answer = instance_args(server.http_url, "on_second_gpu", "http")
    assert answer["model_instance_kind"] == ["str", "GPU"]
    assert answer["model_instance_device_id"] == ["str", "1"]


@pytest.mark.parametrize("name, kind", [("on_cpu", "CPU"), ("on_model", "MODEL")])
def test_other_kinds_keep_device_zero(server: ServerProcess, name: str, kind: str) -> None:
    answer = instance_args(server.http_url, name, "http")
    assert answer["model_instance_kind"] == ["str", kind]
    assert answer["model_instance_device_id"] == ["str", "0"]


def test_gpu_instance_without_a_cuda_binding_says_so_in_the_verbose_log(
        server: ServerProcess) -> None:
    assert instance_args(server.http_url, "on_gpu", "http")["model_instance_kind"][1] == "GPU"
    assert ("on_gpu_0_0: could not make GPU 0 current (fine if the model does no CUDA work)"
            in server.log())


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("answer_by", ["return", "sender"])
def test_gpu_tensor_in_a_response_reaches_the_client(server: ServerProcess, protocol: str,
                                                     answer_by: str) -> None:
    module = httpclient if protocol == "http" else grpcclient
    url = server.http_url if protocol == "http" else server.grpc_url
    client = module.InferenceServerClient(url)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    tensor = module.InferInput("IN", [2, 3], "FP32")
    tensor.set_data_from_numpy(x)
    result = client.infer(f"stand_in_{answer_by}", [tensor])
    np.testing.assert_array_equal(result.as_numpy("OUT"), 2 * x + 1)
    checks = json.loads(result.as_numpy("CHECKS")[0])
    assert checks == {
        "is_cpu": False,
        "shape": [2, 3],
        "as_numpy": "Tensor is stored in GPU and cannot be converted to NumPy.",
        "dlpack_device": [2, 0],
        "copies_before_answer": 0,  # the stub copies it for the wire, after execute
    }
