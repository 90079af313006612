"""GPU metrics from the real NVML of a GPU machine: every GPU the server sees has its series,
with plausible figures, and a plain GET of /metrics gives perf_analyzer what it parses."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

from support.gpu import gpu
from support.server_process import ServerProcess

pytestmark = [*gpu]

PERF_ANALYZER_METRICS = ("nv_gpu_utilization", "nv_gpu_power_usage",
                         "nv_gpu_memory_used_bytes", "nv_gpu_memory_total_bytes")


def read(text: str, name: str) -> dict[str, float]:
    """perf_analyzer's pattern for a GPU metric: `<name>{gpu_uuid="<uuid>"} <plain decimal>`."""
    pattern = re.compile("\n" + name + r'\{gpu_uuid="([^"]+)"\} (\d+\.?\d*)')
    return {uuid: float(value) for uuid, value in pattern.findall(text)}


def test_real_gpus_report_plausible_figures(tmp_path: Path) -> None:
    import pynvml

    pynvml.nvmlInit()
    try:
        count = pynvml.nvmlDeviceGetCount()
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        uuids = {pynvml.nvmlDeviceGetUUID(h): pynvml.nvmlDeviceGetMemoryInfo(h).total
                 for h in handles}
    finally:
        pynvml.nvmlShutdown()
    uuids = {(u.decode() if isinstance(u, bytes) else u): total for u, total in uuids.items()}
    repo = tmp_path / "repo"
    repo.mkdir()
    with ServerProcess([repo], "--metrics-interval-ms=200") as server:
        # perf_analyzer --collect-metrics: a plain GET of the metrics URL.
        with urllib.request.urlopen(server.metrics_url, timeout=10) as answer:
            assert answer.status == 200
            text = answer.read().decode()
        log = server.log()
    figures = {name: read(text, name) for name in PERF_ANALYZER_METRICS}
    seen = set(figures["nv_gpu_memory_total_bytes"])
    assert seen and seen <= set(uuids), text  # the visible GPUs, by NVML's UUIDs
    for name, per_gpu in figures.items():
        assert set(per_gpu) == seen, (name, text)
    limits = read(text, "nv_gpu_power_limit")
    energy = {uuid: float(value) for uuid, value in re.findall(
        r'\nnv_energy_consumption\{gpu_uuid="([^"]+)"\} (\S+)', text)}
    for uuid in seen:
        total = uuids[uuid]
        assert figures["nv_gpu_memory_total_bytes"][uuid] == total
        assert 0 <= figures["nv_gpu_memory_used_bytes"][uuid] <= total
        assert 0.0 <= figures["nv_gpu_utilization"][uuid] <= 1.0
        assert figures["nv_gpu_power_usage"][uuid] >= 0
        assert limits[uuid] > 0
        if uuid in energy:  # boards without an energy counter leave it out
            assert 0 <= energy[uuid] < 1e6
    assert "Collecting metrics for GPU 0: " in log
