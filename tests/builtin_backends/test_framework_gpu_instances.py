"""Framework backends on a server that has a GPU (NVML answering from a probe recorded on an
H200) while its frameworks do not (CPU torch, CPU onnxruntime): a KIND_GPU instance fails to load
with one line saying what to install, never running on the CPU unannounced; a model that
configures no instance group runs on the CPU and serves."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import onnxruntime
import pytest
import torch
import tritonclient.http as httpclient

from support import onnx_models, torch_models
from support.gpu import fake_gpu_env
from support.models import infer_arrays, write_model
from support.server_process import ServerProcess
from tritium.builtin_backends.pytorch.device import check_cuda_device
from tritium.errors import Code, TritonError

PT_IO = """
max_batch_size: 8
input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] },
        { name: "INPUT__1" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 4 ] },
         { name: "OUTPUT__1" data_type: TYPE_FP32 dims: [ 4 ] } ]
"""
GPU_GROUP = "instance_group [ { kind: KIND_GPU } ]\n"

cpu_frameworks = pytest.mark.skipif(
    torch.backends.cuda.is_built()
    or "CUDAExecutionProvider" in onnxruntime.get_available_providers(),
    reason="checks what CPU builds of torch and onnxruntime do with KIND_GPU instances; the "
           "CUDA builds are tested by the gpu tests",
)


def write_repo(repo: Path) -> Path:
    for name, group in (("pt_gpu", GPU_GROUP), ("pt_default", "")):
        write_model(repo, name, f'platform: "pytorch_libtorch"\n{PT_IO}{group}')
        torch_models.save(torch_models.AddSub(), repo / name / "1" / "model.pt")
    for name, group in (("onnx_gpu", GPU_GROUP), ("onnx_default", "")):
        write_model(repo, name, f'platform: "onnxruntime_onnx"\n{group}')
        onnx_models.save(onnx_models.add_sub(), repo / name / "1" / "model.onnx")
    return repo


def kinds(server: ServerProcess, name: str) -> list[str]:
    with urllib.request.urlopen(f"http://{server.http_url}/v2/models/{name}/config") as answer:
        return [group["kind"] for group in json.loads(answer.read())["instance_group"]]


@cpu_frameworks
def test_kind_gpu_needs_a_framework_built_with_cuda(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "repo")
    with ServerProcess([repo], "--exit-on-error=false", "--strict-readiness=false",
                       env=fake_gpu_env()) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert not client.is_model_ready("pt_gpu")
        assert not client.is_model_ready("onnx_gpu")
        # Models that name no kind run on the CPU, as their frameworks can.
        assert kinds(server, "pt_default") == kinds(server, "onnx_default") == ["KIND_CPU"]
        a = np.arange(8, dtype=np.float32).reshape(2, 4)
        b = np.ones((2, 4), np.float32)
        result = infer_arrays(httpclient, server.http_url, "pt_default",
                              {"INPUT__0": a, "INPUT__1": b})
        np.testing.assert_array_equal(result.as_numpy("OUTPUT__0"), a + b)
        result = infer_arrays(httpclient, server.http_url, "onnx_default",
                              {"INPUT0": a, "INPUT1": b})
        np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)
        log = server.log()
    torch_line = (f"instance pt_gpu_0_0 of model pt_gpu is KIND_GPU (device 0) but the "
                  f"installed torch {torch.__version__} has no CUDA: install a CUDA build of "
                  "torch, or use KIND_CPU")
    ort_line = (f"instance onnx_gpu_0_0 of model onnx_gpu is KIND_GPU (device 0) but the "
                f"installed onnxruntime {onnxruntime.__version__} has no CUDAExecutionProvider "
                f"(it has {', '.join(onnxruntime.get_available_providers())}): install "
                "onnxruntime-gpu in place of onnxruntime (pip uninstall onnxruntime && pip "
                "install onnxruntime-gpu), or use KIND_CPU")
    for line in (torch_line, ort_line):
        assert any(line in entry for entry in log.splitlines()), log


def test_a_device_torch_does_not_see_is_refused_with_what_it_sees(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What a CUDA build of torch answers where one GPU is visible (the gpu tests meet it for
    # real): the instance placed on device 1 is refused, naming what torch sees.
    cuda_torch = SimpleNamespace(
        __version__="2.11.0+cu130",
        version=SimpleNamespace(cuda="13.0"),
        backends=SimpleNamespace(cuda=SimpleNamespace(is_built=lambda: True)),
        cuda=SimpleNamespace(device_count=lambda: 1),
    )
    instance = SimpleNamespace(name="m_0_0", model=SimpleNamespace(name="m"), device_id=1)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    with pytest.raises(TritonError) as info:
        check_cuda_device(cuda_torch, instance)  # type: ignore[arg-type]
    assert info.value.code == Code.UNAVAILABLE
    assert info.value.message == (
        "instance m_0_0 of model m is KIND_GPU (device 1) but torch 2.11.0+cu130 (CUDA 13.0) "
        "sees 1 CUDA device(s) with CUDA_VISIBLE_DEVICES='3': check the NVIDIA driver and "
        "CUDA_VISIBLE_DEVICES, or use KIND_CPU"
    )
    instance.device_id = 0
    check_cuda_device(cuda_torch, instance)  # type: ignore[arg-type]
