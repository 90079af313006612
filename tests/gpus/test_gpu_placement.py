"""Discovery and placement: a server that sees GPUs (NVML answering from a probe recorded on an
H200, or from probes listing more devices) places KIND_GPU, KIND_AUTO and unspecified instance
groups on them the way Triton does; a server without a driver is the CPU server it always was."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from support.gpu import H200_PROBE, fake_gpu_env, write_probe
from support.gpu import instance_groups as groups
from support.models import identity_config, write_model
from support.server_process import ServerProcess


def write_repo(repo: Path) -> Path:
    write_model(repo, "unspecified", identity_config("unspecified"))
    write_model(repo, "on_gpu", identity_config(
        "on_gpu", extra="instance_group [ { kind: KIND_GPU count: 2 } ]"))
    write_model(repo, "on_cpu", identity_config(
        "on_cpu", extra="instance_group [ { kind: KIND_CPU } ]"))
    write_model(repo, "second_gpu", identity_config(
        "second_gpu", extra="instance_group [ { kind: KIND_GPU gpus: [ 1 ] } ]"))
    return repo


def test_one_h200_takes_gpu_and_unspecified_groups(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "repo")
    with ServerProcess([repo], "--exit-on-error=false", "--strict-readiness=false",
                       env=fake_gpu_env(H200_PROBE)) as server:
        assert groups(server, "unspecified") == [("KIND_GPU", 1, [0])]
        assert groups(server, "on_gpu") == [("KIND_GPU", 2, [0])]
        assert groups(server, "on_cpu") == [("KIND_CPU", 1, [])]
        log = server.log()
    assert "GPU 0: NVIDIA H200 (compute capability 9.0" in log
    assert ("instance group second_gpu_0 of model second_gpu specifies invalid or unsupported "
            "gpu id 1. GPUs with at least the minimum required CUDA compute compatibility of "
            "6.000000 are: 0") in log


def test_without_a_driver_everything_is_cpu(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "repo")
    env = fake_gpu_env(H200_PROBE)
    env["TRITIUM_FAKE_NVML"] = ""  # NVML: "Driver Not Loaded"
    with ServerProcess([repo], "--exit-on-error=false", "--strict-readiness=false",
                       env=env) as server:
        assert groups(server, "unspecified") == [("KIND_CPU", 1, [])]
        log = server.log()
    assert ("instance group on_gpu_0 of model on_gpu has kind KIND_GPU but no GPUs are "
            "available") in log


@pytest.mark.parametrize("visible, expected", [
    (None, [0, 1, 2]),           # every device, one instance each
    ("2,0", [0, 1]),             # two visible: CUDA renumbers them 0 and 1
    ("GPU-00000001", [0]),       # a UUID prefix names one device
    ("1,7,0", [0]),              # the list ends at the first entry naming no device
])
def test_cuda_visible_devices_and_one_instance_per_gpu(tmp_path: Path, visible: str | None,
                                                       expected: list[int]) -> None:
    repo = tmp_path / "repo"
    write_model(repo, "unspecified", identity_config("unspecified"))
    env = fake_gpu_env(write_probe(tmp_path / "probe.json", [(9, 0), (8, 0), (9, 0)]))
    if visible is not None:
        env["CUDA_VISIBLE_DEVICES"] = visible
    with ServerProcess([repo], env=env) as server:
        assert groups(server, "unspecified") == [("KIND_GPU", 1, expected)]
        stats_url = f"http://{server.http_url}/v2/models/unspecified/stats"
        with urllib.request.urlopen(stats_url) as answer:
            assert json.loads(answer.read())["model_stats"][0]["name"] == "unspecified"


def test_min_supported_compute_capability(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_model(repo, "unspecified", identity_config("unspecified"))
    write_model(repo, "on_gpu0", identity_config(
        "on_gpu0", extra="instance_group [ { kind: KIND_GPU gpus: [ 0 ] } ]"))
    env = fake_gpu_env(write_probe(tmp_path / "probe.json", [(7, 5), (9, 0)]))
    with ServerProcess([repo], "--min-supported-compute-capability=8.0",
                       "--exit-on-error=false", "--strict-readiness=false", env=env) as server:
        assert groups(server, "unspecified") == [("KIND_GPU", 1, [1])]
        log = server.log()
    assert ("GPU 0: NVIDIA H200 has compute capability 7.5, below "
            "--min-supported-compute-capability 8.0: no model instance is placed on it") in log
    assert ("specifies invalid or unsupported gpu id 0. GPUs with at least the minimum "
            "required CUDA compute compatibility of 8.000000 are: 1") in log


def test_model_load_gpu_limit(tmp_path: Path) -> None:
    """The H200 of the probe has 0.43 % of its memory in use: a limit under that refuses loads
    onto it (and only onto it), a limit over it lets them through."""
    repo = tmp_path / "repo"
    write_model(repo, "on_gpu", identity_config(
        "on_gpu", extra="instance_group [ { kind: KIND_GPU } ]"))
    write_model(repo, "on_cpu", identity_config(
        "on_cpu", extra="instance_group [ { kind: KIND_CPU } ]"))
    with ServerProcess([repo], "--model-load-gpu-limit=0:0.001", "--exit-on-error=false",
                       "--strict-readiness=false", env=fake_gpu_env(H200_PROBE)) as server:
        assert groups(server, "on_cpu") == [("KIND_CPU", 1, [])]
        log = server.log()
    assert ("failed to load 'on_gpu' version 1: Unavailable: memory limit set for GPU 0 has "
            "exceeded, model loading is rejected.") in log
    assert "| model_load_gpu_limit{0}          | 0.001" in log
    with ServerProcess([repo], "--model-load-gpu-limit=0:0.9",
                       env=fake_gpu_env(H200_PROBE)) as server:
        assert groups(server, "on_gpu") == [("KIND_GPU", 1, [0])]


def test_model_load_gpu_limit_format(tmp_path: Path) -> None:
    server = ServerProcess([tmp_path], "--model-load-gpu-limit=0.9")
    server.start(wait_ready=False)
    assert server.wait_exit() != 0
    assert "expected <device_id>:<fraction>" in server.log()
