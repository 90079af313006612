"""The onnxruntime backend on a real GPU: a KIND_GPU instance runs on the CUDA execution
provider when the installed onnxruntime has it (outputs checked), and where it has not (the
CPU-only `onnxruntime` package) fails to load naming `onnxruntime-gpu`, while a model that
configures no instance group stays on the CPU and serves."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import numpy as np
import onnxruntime
import tritonclient.http as httpclient

from support import onnx_models
from support.gpu import gpu
from support.models import infer_arrays, write_model
from support.server_process import ServerProcess

pytestmark = [*gpu]


def test_kind_gpu_runs_on_the_cuda_provider_or_names_what_to_install(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_model(repo, "onnx_gpu", 'platform: "onnxruntime_onnx"\n'
                'instance_group [ { kind: KIND_GPU } ]\n')
    write_model(repo, "onnx_default", 'platform: "onnxruntime_onnx"\n')
    for name in ("onnx_gpu", "onnx_default"):
        onnx_models.save(onnx_models.add_sub(), repo / name / "1" / "model.onnx")
    has_cuda = "CUDAExecutionProvider" in onnxruntime.get_available_providers()
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    b = np.full((2, 4), 0.5, np.float32)
    with ServerProcess([repo], "--exit-on-error=false", "--strict-readiness=false") as server:
        url = f"http://{server.http_url}/v2/models/onnx_default/config"
        with urllib.request.urlopen(url) as answer:
            (group,) = json.loads(answer.read())["instance_group"]
        assert group["kind"] == ("KIND_GPU" if has_cuda else "KIND_CPU")
        names = ["onnx_default", "onnx_gpu"] if has_cuda else ["onnx_default"]
        for name in names:
            result = infer_arrays(httpclient, server.http_url, name, {"INPUT0": a, "INPUT1": b})
            np.testing.assert_allclose(result.as_numpy("OUTPUT0"), a + b, rtol=1e-6)
            np.testing.assert_allclose(result.as_numpy("OUTPUT1"), a - b, rtol=1e-6)
        ready = httpclient.InferenceServerClient(server.http_url).is_model_ready("onnx_gpu")
        log = server.log()
    assert ready == has_cuda
    if not has_cuda:
        assert (f"instance onnx_gpu_0_0 of model onnx_gpu is KIND_GPU (device 0) but the "
                f"installed onnxruntime {onnxruntime.__version__} has no "
                "CUDAExecutionProvider") in log
        assert "pip install onnxruntime-gpu" in log
