"""The pytorch backend on a real GPU: a TorchScript MLP served from KIND_GPU instances (named, and
chosen by the server when the configuration names no group) answers what torch on the CPU
answers, over http and grpc; the work really runs on the GPU (a module that reports where its
input lives), a KIND_CPU instance on the same machine stays on the CPU, a KIND_MODEL module
saved on the GPU stays there, statistics keep compute_infer, and a device torch cannot see is
refused."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import torch
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from support import torch_models
from support.gpu import fake_gpu_env, gpu, write_probe
from support.models import infer_arrays, write_model
from support.server_process import ServerProcess

pytestmark = [*gpu]

CLIENTS = (("http", httpclient), ("grpc", grpcclient))
MLP_IO = ('max_batch_size: 8\n'
          'input [ { name: "x__0" data_type: TYPE_FP32 dims: [ 64 ] } ]\n'
          'output [ { name: "logits__0" data_type: TYPE_FP32 dims: [ 16 ] } ]\n')
WHERE_IO = ('max_batch_size: 8\n'
            'input [ { name: "x__0" data_type: TYPE_FP32 dims: [ 2 ] } ]\n'
            'output [ { name: "on_gpu__0" data_type: TYPE_INT64 dims: [ 1 ] },\n'
            '         { name: "device__1" data_type: TYPE_INT64 dims: [ 1 ] } ]\n')

PLACED_IO = ('max_batch_size: 8\n'
             'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] },\n'
             '        { name: "INPUT1" data_type: TYPE_FP32 dims: [ 16 ] } ]\n'
             'output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 16 ] },\n'
             '         { name: "OUTPUT__1" data_type: TYPE_FP32 dims: [ 16 ] },\n'
             '         { name: "OUTPUT__2" data_type: TYPE_INT64 dims: [ 1 ] } ]\n')


def config(io: str, group: str = "") -> str:
    return f'platform: "pytorch_libtorch"\n{io}{group}'


def get(server: ServerProcess, path: str) -> dict:
    with urllib.request.urlopen(f"http://{server.http_url}{path}") as answer:
        return json.loads(answer.read())


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp("torch_gpu_repo")
    write_model(repo, "mlp_gpu", config(MLP_IO, "instance_group [ { kind: KIND_GPU } ]\n"))
    write_model(repo, "mlp_default", config(MLP_IO))
    for name in ("mlp_gpu", "mlp_default"):
        torch_models.save(torch_models.mlp(), repo / name / "1" / "model.pt")
    write_model(repo, "where_gpu", config(WHERE_IO, "instance_group [ { kind: KIND_GPU } ]\n"))
    write_model(repo, "where_cpu", config(WHERE_IO, "instance_group [ { kind: KIND_CPU } ]\n"))
    for name in ("where_gpu", "where_cpu"):
        torch_models.save(torch_models.WhereAmI(), repo / name / "1" / "model.pt")
    write_model(repo, "placed_gpu", config(PLACED_IO, "instance_group [ { kind: KIND_MODEL } ]\n"))
    torch_models.save(torch_models.Placed("cuda:0"), repo / "placed_gpu" / "1" / "model.pt")
    with ServerProcess([repo]) as process:
        yield process


def test_a_model_without_instance_group_lands_on_the_gpu(server: ServerProcess) -> None:
    (group,) = get(server, "/v2/models/mlp_default/config")["instance_group"]
    assert group["kind"] == "KIND_GPU" and 0 in group["gpus"]


@pytest.mark.parametrize("model", ["mlp_gpu", "mlp_default"])
@pytest.mark.parametrize("protocol,module", CLIENTS)
def test_outputs_match_torch_on_the_cpu(server: ServerProcess, protocol: str, module,
                                        model: str) -> None:
    url = server.http_url if protocol == "http" else server.grpc_url
    torch_models.assert_mlp_served(module, url, model, seed=7, tolerance=1e-4)


@pytest.mark.parametrize("protocol,module", CLIENTS)
def test_the_work_runs_on_the_instances_device(server: ServerProcess, protocol: str,
                                               module) -> None:
    url = server.http_url if protocol == "http" else server.grpc_url
    x = np.ones((3, 2), np.float32)
    gpu_answer = infer_arrays(module, url, "where_gpu", {"x__0": x})
    (group,) = get(server, "/v2/models/where_gpu/config")["instance_group"]
    assert gpu_answer.as_numpy("on_gpu__0").tolist() == [[1]] * 3
    assert gpu_answer.as_numpy("device__1")[0, 0] in group["gpus"]
    cpu_answer = infer_arrays(module, url, "where_cpu", {"x__0": x})
    assert cpu_answer.as_numpy("on_gpu__0").tolist() == [[0]] * 3
    assert cpu_answer.as_numpy("device__1").tolist() == [[-1]] * 3


def test_a_kind_model_module_runs_where_it_was_saved(server: ServerProcess) -> None:
    # Loaded without a map_location, as Triton does for KIND_MODEL: its buffer stays on cuda:0,
    # so forward() moves the CPU inputs there.
    a = np.arange(16, dtype=np.float32).reshape(1, 16)
    b = np.ones((1, 16), np.float32)
    answer = infer_arrays(httpclient, server.http_url, "placed_gpu", {"INPUT0": a, "INPUT1": b})
    np.testing.assert_array_equal(answer.as_numpy("OUTPUT__0"), a + b)
    np.testing.assert_array_equal(answer.as_numpy("OUTPUT__1"), a - b)
    assert answer.as_numpy("OUTPUT__2").tolist() == [[0]]
    server.wait_log("Placed - inputs on cuda:0")


def test_statistics_count_compute_infer_on_the_gpu(server: ServerProcess) -> None:
    x = np.zeros((8, 64), np.float32)
    for _ in range(3):
        infer_arrays(httpclient, server.http_url, "mlp_gpu", {"x__0": x})
    (stats,) = get(server, "/v2/models/mlp_gpu/stats")["model_stats"]
    infer = stats["inference_stats"]
    assert stats["execution_count"] >= 3
    for phase in ("compute_input", "compute_infer", "compute_output"):
        assert infer[phase]["count"] >= 3 and infer[phase]["ns"] > 0, phase


@pytest.mark.skipif("CUDA_VISIBLE_DEVICES" in os.environ,
                    reason="counts the GPUs torch sees with CUDA_VISIBLE_DEVICES unset")
def test_a_device_torch_does_not_see_is_refused(tmp_path: Path) -> None:
    # NVML (the fake one) reports one GPU more than the CUDA driver has.
    count = torch.cuda.device_count()
    probe = write_probe(tmp_path / "probe.json", [(9, 0)] * (count + 1))
    repo = tmp_path / "repo"
    write_model(repo, "beyond", config(
        MLP_IO, f"instance_group [ {{ kind: KIND_GPU gpus: [ {count} ] }} ]\n"))
    torch_models.save(torch_models.mlp(), repo / "beyond" / "1" / "model.pt")
    with ServerProcess([repo], "--exit-on-error=false", "--strict-readiness=false",
                       env=fake_gpu_env(probe)) as server:
        assert not httpclient.InferenceServerClient(server.http_url).is_model_ready("beyond")
        log = server.log()
    assert (f"instance beyond_0_0 of model beyond is KIND_GPU (device {count}) but torch "
            f"{torch.__version__} (CUDA {torch.version.cuda}) sees {count} CUDA device(s): "
            "check the NVIDIA driver and CUDA_VISIBLE_DEVICES, or use KIND_CPU") in log
