"""What GPU tests share: the `gpu` mark with its skip on machines without CUDA, and the fake NVML
that lets CPU-only tests start a server which believes it has the GPUs a probe file lists."""

from __future__ import annotations

import copy
import functools
import json
import os
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from support import ROOT, SUPPORT
from support.server_process import ServerProcess

FAKE_NVML = SUPPORT / "fake_nvml"
# What NVML answered on an H200 of the device machine (shared/data/gpu/h200-probe.json).
H200_PROBE = SUPPORT / "data" / "gpu" / "h200-probe.json"


@functools.cache
def cuda_device_count() -> int:
    """CUDA devices torch can use here (0 without CUDA torch or a driver)."""
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


# Every GPU test carries both: `make test-gpu` selects `-m gpu`; without CUDA the test is skipped
# with the reason (a skip is never a pass).
gpu = [
    pytest.mark.gpu,
    pytest.mark.skipif(cuda_device_count() == 0,
                       reason="needs a CUDA GPU (torch sees none): run `make test-gpu` on a GPU "
                              "machine (tools/gpu-check.sh)"),
]


def fake_gpu_env(probe: Path = H200_PROBE) -> dict[str, str]:
    """Environment for a ServerProcess whose NVML answers from `probe`."""
    return {
        "PYTHONPATH": os.pathsep.join([str(FAKE_NVML), str(ROOT / "src"),
                                       os.environ.get("PYTHONPATH", "")]),
        "TRITIUM_FAKE_NVML": str(probe),
    }


def write_probe(path: Path, capabilities: list[tuple[int, int]]) -> Path:
    """A probe file with one device per compute capability, each a copy of the H200's
    answers with its own index and UUID."""
    probe: dict[str, Any] = json.loads(H200_PROBE.read_text())
    template = probe["nvml_devices"][0]
    devices = []
    for index, capability in enumerate(capabilities):
        device = copy.deepcopy(template)
        device["index"] = index
        device["uuid"] = f"GPU-{index:08d}-0000-0000-0000-000000000000"
        device["pci_bus_id"] = f"00000000:00:{6 + index:02X}.0"
        device["compute_capability"] = list(capability)
        devices.append(device)
    probe["nvml_devices"] = devices
    path.write_text(json.dumps(probe))
    return path


def instance_groups(server: ServerProcess, model: str) -> list[tuple[str, int, list[int]]]:
    """(kind, count, gpus) of each of the model's instance groups, as the server normalised
    them (its configuration over HTTP)."""
    url = f"http://{server.http_url}/v2/models/{model}/config"
    with urllib.request.urlopen(url) as answer:
        config = json.loads(answer.read())
    return [(g["kind"], g["count"], g.get("gpus", [])) for g in config["instance_group"]]


def gpu_memory(pid: int) -> tuple[int, int | None]:
    """NVML: GPU 0's used bytes, and what process `pid` holds there (None where NVML does not
    list it: gone, or in a container whose PIDs NVML gives as the host's; or cannot tell).
    The process's own figure, unlike the GPU's, is not moved by other test workers' processes
    starting and ending on the same GPU."""
    import pynvml

    pynvml.nvmlInit()
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        used = pynvml.nvmlDeviceGetMemoryInfo(handle).used
        mine = [p.usedGpuMemory for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
                if p.pid == pid]
        return used, mine[0] if mine and isinstance(mine[0], int) else None
    finally:
        pynvml.nvmlShutdown()
