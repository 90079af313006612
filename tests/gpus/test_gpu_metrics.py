"""GPU metrics on /metrics as Triton writes them: nv_gpu_utilization, nv_gpu_memory_total_bytes,
nv_gpu_memory_used_bytes, nv_gpu_power_usage, nv_gpu_power_limit (gauges) and
nv_energy_consumption (counter), one series per GPU labelled gpu_uuid, read from NVML every
--metrics-interval-ms. The server's NVML answers from a probe recorded on an H200 (the fake
pynvml), which a test may rewrite while the server runs, as the figures of a real GPU move."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from support import ROOT
from support.gpu import H200_PROBE, fake_gpu_env, write_probe
from support.server_process import ServerProcess

H200_UUID = "GPU-bbec6212-ee87-f9d6-5af2-481898f3c24f"
# Triton 2.51's families (core/src/metrics.cc): name -> (type, HELP).
TRITON_GPU_FAMILIES = {
    "nv_gpu_utilization": ("gauge", "GPU utilization rate [0.0 - 1.0)"),
    "nv_gpu_memory_total_bytes": ("gauge", "GPU total memory, in bytes"),
    "nv_gpu_memory_used_bytes": ("gauge", "GPU used memory, in bytes"),
    "nv_gpu_power_usage": ("gauge", "GPU power usage in watts"),
    "nv_gpu_power_limit": ("gauge", "GPU power management limit in watts"),
    "nv_energy_consumption": (
        "counter", "GPU energy consumption in joules since the Triton Server started"),
}


def scrape(server: ServerProcess) -> str:
    with urllib.request.urlopen(server.metrics_url, timeout=10) as answer:
        return answer.read().decode()


def gpu_samples(text: str) -> dict[tuple[str, str], float]:
    """(family, gpu_uuid) -> value, as Prometheus' own parser reads the exposition."""
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if "gpu_uuid" in sample.labels:
                assert set(sample.labels) == {"gpu_uuid"}
                samples[(family.name, sample.labels["gpu_uuid"])] = sample.value
    return samples


def perf_analyzer_reads(text: str, name: str) -> dict[str, float]:
    """What perf_analyzer --collect-metrics takes from the text: its pattern for a GPU metric
    (a line `<name>{gpu_uuid="<uuid>"} <plain decimal>`)."""
    pattern = re.compile("\n" + name + r'\{gpu_uuid="([^"]+)"\} (\d+\.?\d*)')
    return {uuid: float(value) for uuid, value in pattern.findall(text)}


def empty_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    return repo


def write_json(path: Path, probe: dict[str, Any]) -> None:
    """Replace the probe in one step: the server's NVML may read it at any moment."""
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(probe))
    os.replace(partial, path)


def wait_for(server: ServerProcess, family: str, uuid: str, value: float) -> str:
    deadline = time.monotonic() + 15
    while True:
        text = scrape(server)
        if gpu_samples(text).get((family, uuid)) == value:
            return text
        assert time.monotonic() < deadline, f"{family} never became {value}:\n{text}"
        time.sleep(0.05)


def test_the_h200_as_triton_reports_it(tmp_path: Path) -> None:
    with ServerProcess([empty_repo(tmp_path)], "--metrics-interval-ms=100",
                       env=fake_gpu_env(H200_PROBE)) as server:
        text = scrape(server)
        log = server.log()
    families = {f.name: (f.type, f.documentation) for f in text_string_to_metric_families(text)}
    for name, (kind, help_text) in TRITON_GPU_FAMILIES.items():
        assert families[name] == (kind, help_text), name
        assert f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n" in text
    assert gpu_samples(text) == {
        ("nv_gpu_utilization", H200_UUID): 0.0,
        ("nv_gpu_memory_total_bytes", H200_UUID): 150754820096,
        ("nv_gpu_memory_used_bytes", H200_UUID): 644939776,
        ("nv_gpu_power_usage", H200_UUID): 111.545,
        ("nv_gpu_power_limit", H200_UUID): 700,
        ("nv_energy_consumption", H200_UUID): 0,  # none consumed since the server started
    }
    lines = text.splitlines()
    assert f'nv_gpu_memory_total_bytes{{gpu_uuid="{H200_UUID}"}} 150754820096' in lines
    assert f'nv_gpu_power_usage{{gpu_uuid="{H200_UUID}"}} 111.545' in lines
    # perf_analyzer --collect-metrics finds the four it reads.
    assert perf_analyzer_reads(text, "nv_gpu_utilization") == {H200_UUID: 0.0}
    assert perf_analyzer_reads(text, "nv_gpu_power_usage") == {H200_UUID: 111.545}
    assert perf_analyzer_reads(text, "nv_gpu_memory_used_bytes") == {H200_UUID: 644939776}
    assert perf_analyzer_reads(text, "nv_gpu_memory_total_bytes") == {H200_UUID: 150754820096}
    # GPU families come before the CPU ones, as Triton registers them.
    assert text.index("nv_energy_consumption") < text.index("nv_cpu_utilization")
    assert "Collecting metrics for GPU 0: NVIDIA H200" in log


def test_figures_follow_the_gpu_and_energy_counts_from_start(tmp_path: Path) -> None:
    probe_path = tmp_path / "probe.json"
    probe = json.loads(H200_PROBE.read_text())
    write_json(probe_path, probe)
    with ServerProcess([empty_repo(tmp_path)], "--metrics-interval-ms=50",
                       env=fake_gpu_env(probe_path)) as server:
        assert gpu_samples(scrape(server))[("nv_energy_consumption", H200_UUID)] == 0
        device = probe["nvml_devices"][0]
        device["energy_mj"] += 12345
        device["power_usage_mw"] = 402250
        device["utilization_gpu_pct"] = 37
        device["memory_used"] = 80 << 30
        write_json(probe_path, probe)
        text = wait_for(server, "nv_energy_consumption", H200_UUID, 12.345)
        samples = gpu_samples(text)
        assert samples[("nv_gpu_power_usage", H200_UUID)] == 402.25
        assert samples[("nv_gpu_utilization", H200_UUID)] == 0.37
        assert samples[("nv_gpu_memory_used_bytes", H200_UUID)] == 80 << 30
        # The counter only adds what was consumed since: 2 more joules make 14.345.
        device["energy_mj"] += 2000
        write_json(probe_path, probe)
        wait_for(server, "nv_energy_consumption", H200_UUID, 14.345)


def test_allow_gpu_metrics_false_leaves_them_out(tmp_path: Path) -> None:
    with ServerProcess([empty_repo(tmp_path)], "--allow-gpu-metrics=false",
                       env=fake_gpu_env(H200_PROBE)) as server:
        text = scrape(server)
        log = server.log()
    assert "nv_gpu_" not in text and "nv_energy_consumption" not in text
    assert "nv_cpu_utilization" in text
    assert "Collecting metrics for GPU" not in log
    assert "--allow-gpu-metrics has no effect" not in log


def test_without_a_driver_there_are_none(tmp_path: Path) -> None:
    env = fake_gpu_env(H200_PROBE)
    env["TRITIUM_FAKE_NVML"] = ""  # NVML: "Driver Not Loaded"
    with ServerProcess([empty_repo(tmp_path)], env=env) as server:
        text = scrape(server)
        log = server.log()
    assert "nv_gpu_" not in text and "nv_energy_consumption" not in text
    assert "nv_cpu_utilization" in text
    assert "Collecting metrics for GPU" not in log and "GPU metrics" not in log


def test_a_figure_a_gpu_cannot_give_is_left_out(tmp_path: Path) -> None:
    probe_path = write_probe(tmp_path / "probe.json", [(9, 0), (9, 0)])
    probe = json.loads(probe_path.read_text())
    # GPU 1 has no energy counter nor power sensor: NVML answers NOT_SUPPORTED.
    del probe["nvml_devices"][1]["energy_mj"]
    del probe["nvml_devices"][1]["power_usage_mw"]
    write_json(probe_path, probe)
    first, second = (d["uuid"] for d in probe["nvml_devices"])
    with ServerProcess([empty_repo(tmp_path)], env=fake_gpu_env(probe_path)) as server:
        samples = gpu_samples(scrape(server))
        log = server.log()
    assert {uuid for (name, uuid) in samples if name == "nv_energy_consumption"} == {first}
    assert {uuid for (name, uuid) in samples if name == "nv_gpu_power_usage"} == {first}
    for name in ("nv_gpu_utilization", "nv_gpu_memory_total_bytes", "nv_gpu_memory_used_bytes",
                 "nv_gpu_power_limit"):
        assert {uuid for (n, uuid) in samples if n == name} == {first, second}, name
    assert "Collecting metrics for GPU 1: NVIDIA H200" in log
    assert "Unable to read energy for GPU 1: Not Supported" in log
    assert "Unable to read power usage for GPU 1: Not Supported" in log


def test_a_family_no_gpu_can_give_is_not_written(tmp_path: Path) -> None:
    probe = json.loads(H200_PROBE.read_text())
    del probe["nvml_devices"][0]["energy_mj"]
    write_json(tmp_path / "probe.json", probe)
    with ServerProcess([empty_repo(tmp_path)], env=fake_gpu_env(tmp_path / "probe.json")) as server:
        text = scrape(server)
    assert "nv_energy_consumption" not in text  # not even its HELP and TYPE lines
    assert f'nv_gpu_power_limit{{gpu_uuid="{H200_UUID}"}} 700' in text.splitlines()


def test_only_the_visible_gpus_each_under_its_own_uuid(tmp_path: Path) -> None:
    probe_path = write_probe(tmp_path / "probe.json", [(9, 0), (8, 0), (9, 0)])
    probe = json.loads(probe_path.read_text())
    for index, device in enumerate(probe["nvml_devices"]):
        device["power_usage_mw"] = 100000 + index * 1000  # tells the devices apart
    write_json(probe_path, probe)
    env = fake_gpu_env(probe_path)
    env["CUDA_VISIBLE_DEVICES"] = "2,0"
    with ServerProcess([empty_repo(tmp_path)], env=env) as server:
        text = scrape(server)
        log = server.log()
    assert perf_analyzer_reads(text, "nv_gpu_power_usage") == {
        "GPU-00000002-0000-0000-0000-000000000000": 102.0,
        "GPU-00000000-0000-0000-0000-000000000000": 100.0,
    }
    assert "Collecting metrics for GPU 0: NVIDIA H200" in log
    assert "Collecting metrics for GPU 1: NVIDIA H200" in log
    assert "Collecting metrics for GPU 2" not in log


INPROCESS = '''
import json, sys, urllib.request
import tritonserver

repo, out = sys.argv[1], {}
with tritonserver.Server(model_repository=repo, metrics_interval=50) as server:
    out["metrics"] = server.metrics()
    addresses = server.start_frontends(http_port=None, grpc_port=None, metrics_port=0)
    with urllib.request.urlopen(addresses.metrics_url) as answer:
        out["port"] = answer.read().decode()
with tritonserver.Server(model_repository=repo, gpu_metrics=False) as server:
    out["off"] = server.metrics()
    addresses = server.start_frontends(http_port=None, grpc_port=None, metrics_port=0)
    with urllib.request.urlopen(addresses.metrics_url) as answer:
        out["off_port"] = answer.read().decode()
try:
    tritonserver.Server(model_repository=repo, metrics_interval=0).start()
except tritonserver.InvalidArgumentError as exc:
    out["zero"] = str(exc)
print(json.dumps(out))
'''


def test_the_inprocess_api_serves_them_as_its_options_say(tmp_path: Path) -> None:
    repo = empty_repo(tmp_path)
    env = {**os.environ, **fake_gpu_env(H200_PROBE)}
    env["PYTHONPATH"] = env["PYTHONPATH"] + os.pathsep + str(ROOT / "src")
    done = subprocess.run([sys.executable, "-c", INPROCESS, str(repo)], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    for text in (out["metrics"], out["port"]):
        assert gpu_samples(text)[("nv_gpu_memory_total_bytes", H200_UUID)] == 150754820096
        assert gpu_samples(text)[("nv_gpu_power_limit", H200_UUID)] == 700
    for text in (out["off"], out["off_port"]):
        assert "nv_gpu_" not in text and "nv_energy_consumption" not in text
    assert "nv_cpu_utilization" in out["off_port"]
    assert out["zero"] == "metrics_interval must be more than 0 milliseconds, got 0"
