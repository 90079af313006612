"""A server that sees a GPU (NVML answering from a probe recorded on an H200) but has CPU-only
torch: an llm model's KIND_GPU instance fails to load with one line naming what to install, and
a KIND_CPU instance of the same model serves as it always did."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from support.gpu import fake_gpu_env
from support.llm_fixtures import Reference, generate, llm_weights  # noqa: F401
from support.llm_models import llm_repository
from support.server_process import ServerProcess

# The model has no instance_group: its one group is named after the model, its instance "on_gpu_0".
MESSAGE = ("instance on_gpu_0: a KIND_GPU instance needs PyTorch built with CUDA, but the "
           "installed torch ")


def _cpu_only_torch() -> bool:
    import torch

    return torch.version.cuda is None


@pytest.mark.skipif(not _cpu_only_torch(), reason="needs CPU-only torch (this torch has CUDA)")
def test_a_gpu_instance_on_cpu_torch_names_what_to_install(tmp_path: Path,
                                                           llm_weights: dict[str, Path]):
    repo = llm_repository(tmp_path / "repo", {
        "on_gpu": {"family": "llama"},  # no instance_group: KIND_GPU where there is a GPU
        "on_cpu": {"family": "llama", "config": "instance_group [ { kind: KIND_CPU } ]\n"},
    }, llm_weights)
    with ServerProcess([repo], "--exit-on-error=false", "--strict-readiness=false",
                       env=fake_gpu_env()) as server:
        status, body = generate(server, "on_cpu", {
            "text_input": "The quick brown", "exclude_input_in_output": True,
            "max_tokens": 12, "temperature": 0})
        index_request = urllib.request.Request(
            f"http://{server.http_url}/v2/repository/index", data=b"{}", method="POST")
        with urllib.request.urlopen(index_request) as answer:
            index = {m["name"]: m for m in json.loads(answer.read())}
        log = server.log()
    assert status == 200
    assert body["text_output"] == Reference(llm_weights["llama"]).greedy_text(
        "The quick brown", 12)[0]
    assert index["on_gpu"]["state"] == "UNAVAILABLE"
    assert MESSAGE in index["on_gpu"]["reason"]
    assert "download.pytorch.org/whl/cu" in index["on_gpu"]["reason"]
    lines = [line for line in log.splitlines() if MESSAGE in line]
    assert lines, log
    assert "on_cpu_0_0: llm engine on cpu, weights in float32" in log
