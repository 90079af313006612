"""/metrics as Triton's dashboards read it: Triton's names and `# TYPE`s, integers printed as
integers, failures by reason from the moment a model loads, custom pb_utils metrics typed as
declared, CPU figures refreshed on --metrics-interval-ms, served by Tritium's own HTTP server."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
from prometheus_client.parser import text_string_to_metric_families
from tritonclient.utils import InferenceServerException

from support.models import write_model
from support.server_process import ServerProcess

MODEL = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.counter_family = pb_utils.MetricFamily(
            name="requests_seen", description="requests the model saw",
            kind=pb_utils.MetricFamily.COUNTER)
        self.gauge_family = pb_utils.MetricFamily(
            name="last_value", description="the last first value",
            kind=pb_utils.MetricFamily.GAUGE)
        self.histogram_family = pb_utils.MetricFamily(
            name="value_sizes", description="first values",
            kind=pb_utils.MetricFamily.HISTOGRAM)
        self.counter = self.counter_family.Metric(labels={"model": "metered"})
        self.gauge = self.gauge_family.Metric(labels={"model": "metered"})
        self.histogram = self.histogram_family.Metric(labels={"model": "metered"},
                                                      buckets=[1.0, 10.0])

    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            if x.flat[0] < 0:
                raise pb_utils.TritonModelException("negative input")
            self.counter.increment(1)
            self.gauge.set(float(x.flat[0]) / 2)
            self.histogram.observe(float(x.flat[0]))
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", x)]))
        return responses
'''

CONFIG = '''
name: "metered"
backend: "python"
max_batch_size: 4
input { name: "X" data_type: TYPE_FP32 dims: [ 1 ] }
output { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] }
'''


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp("metrics_repo")
    write_model(repo, "metered", CONFIG, files={"1/model.py": MODEL})
    with ServerProcess([repo], "--metrics-interval-ms=50") as process:
        yield process


def scrape(server: ServerProcess) -> str:
    with urllib.request.urlopen(server.metrics_url, timeout=10) as answer:
        assert answer.headers["content-type"] == "text/plain; charset=utf-8"
        return answer.read().decode()


def infer(server: ServerProcess, value: float) -> None:
    client = httpclient.InferenceServerClient(server.http_url)
    x = httpclient.InferInput("X", [1, 1], "FP32")
    x.set_data_from_numpy(np.array([[value]], dtype=np.float32))
    client.infer("metered", [x])


def test_failure_reasons_are_there_at_zero_from_load(server: ServerProcess) -> None:
    lines = scrape(server).splitlines()
    for reason in ("OTHER", "BACKEND", "CANCELED", "REJECTED"):
        assert (f'nv_inference_request_failure{{model="metered",reason="{reason}",version="1"}} 0'
                in lines)


def test_families_are_typed_as_in_triton_with_integer_values(server: ServerProcess) -> None:
    infer(server, 4.0)
    infer(server, 20.0)
    with pytest.raises(InferenceServerException, match="negative input"):
        infer(server, -1.0)
    server.wait_metric("nv_inference_exec_count", "metered", 3)
    text = scrape(server)
    types = {line.split()[2]: line.split()[3] for line in text.splitlines()
             if line.startswith("# TYPE")}
    for name in ("nv_inference_request_success", "nv_inference_request_failure",
                 "nv_inference_count", "nv_inference_exec_count",
                 "nv_inference_request_duration_us", "nv_inference_queue_duration_us",
                 "nv_inference_compute_input_duration_us",
                 "nv_inference_compute_infer_duration_us",
                 "nv_inference_compute_output_duration_us", "requests_seen"):
        assert types[name] == "counter", name
    for name in ("nv_inference_pending_request_count", "nv_cpu_utilization",
                 "nv_cpu_memory_total_bytes", "nv_cpu_memory_used_bytes", "last_value"):
        assert types[name] == "gauge", name
    assert types["value_sizes"] == "histogram"
    lines = text.splitlines()
    assert 'nv_inference_request_success{model="metered",version="1"} 2' in lines
    assert 'nv_inference_request_failure{model="metered",reason="BACKEND",version="1"} 1' in lines
    assert 'nv_inference_count{model="metered",version="1"} 2' in lines
    assert 'requests_seen{model="metered"} 2' in lines
    assert 'last_value{model="metered"} 10' in lines
    assert 'value_sizes_count{model="metered"} 2' in lines
    assert 'value_sizes_sum{model="metered"} 24' in lines
    assert 'value_sizes_bucket{le="1",model="metered"} 0' in lines
    assert 'value_sizes_bucket{le="10",model="metered"} 1' in lines
    assert 'value_sizes_bucket{le="+Inf",model="metered"} 2' in lines
    # Prometheus' own parser reads it, with the same names (no `_total` renaming).
    parsed = {family.name: family.type for family in text_string_to_metric_families(text)}
    assert parsed["nv_inference_count"] == "counter"
    assert parsed["value_sizes"] == "histogram"


def test_cpu_metrics_follow_the_interval(server: ServerProcess) -> None:
    def figures() -> dict[str, float]:
        return {line.split()[0]: float(line.split()[1]) for line in scrape(server).splitlines()
                if line.startswith("nv_cpu_")}

    first = figures()
    meminfo = Path("/proc/meminfo").read_text().split()
    assert first["nv_cpu_memory_total_bytes"] == int(meminfo[meminfo.index("MemTotal:") + 1]) * 1024
    assert 0 < first["nv_cpu_memory_used_bytes"] < first["nv_cpu_memory_total_bytes"]
    assert 0.0 <= first["nv_cpu_utilization"] <= 1.0
    # Refreshed every 50 ms: used memory moves on a machine that is doing anything.
    deadline = time.monotonic() + 30
    while figures()["nv_cpu_memory_used_bytes"] == first["nv_cpu_memory_used_bytes"]:
        assert time.monotonic() < deadline, "CPU metrics never refreshed"
        time.sleep(0.05)


def test_the_endpoint_answers_as_tritons(server: ServerProcess) -> None:
    base = f"http://127.0.0.1:{server.metrics_port}"
    with urllib.request.urlopen(f"{base}/elsewhere") as answer:  # Triton: an empty 200
        assert answer.status == 200 and answer.read() == b""
    request = urllib.request.Request(f"{base}/metrics", data=b"", method="POST")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request)
    assert info.value.code == 405
    assert info.value.read() == b'{"error":"Method Not Allowed"}'


def test_counter_latencies_off_and_cpu_metrics_off(tmp_path: Path) -> None:
    write_model(tmp_path, "metered", CONFIG, files={"1/model.py": MODEL})
    with ServerProcess([tmp_path], "--metrics-config=counter_latencies=false",
                       "--allow-cpu-metrics=false") as process:
        text = scrape(process)
    assert "nv_inference_count" in text
    assert "_duration_us" not in text and "nv_cpu_" not in text


def test_pinned_memory_pool_gauges_as_tritons(server: ServerProcess, tmp_path: Path) -> None:
    # Triton exports its pinned pool whenever metrics are on: the size the flag set (256 MB by
    # default) and what is in use (Tritium stages nothing there).
    lines = scrape(server).splitlines()
    assert "# HELP nv_pinned_memory_pool_total_bytes Pinned memory pool total memory size, " \
        "in bytes" in lines
    assert "# TYPE nv_pinned_memory_pool_total_bytes gauge" in lines
    assert "nv_pinned_memory_pool_total_bytes 268435456" in lines
    assert "# HELP nv_pinned_memory_pool_used_bytes Pinned memory pool used memory size, " \
        "in bytes" in lines
    assert "nv_pinned_memory_pool_used_bytes 0" in lines
    write_model(tmp_path, "metered", CONFIG, files={"1/model.py": MODEL})
    with ServerProcess([tmp_path], "--pinned-memory-pool-byte-size=1024") as process:
        assert "nv_pinned_memory_pool_total_bytes 1024" in scrape(process).splitlines()


SUMMARIES = ("nv_inference_request_summary_us", "nv_inference_queue_summary_us",
             "nv_inference_compute_input_summary_us", "nv_inference_compute_infer_summary_us",
             "nv_inference_compute_output_summary_us")


def test_latency_summaries_with_tritons_default_quantiles(tmp_path: Path) -> None:
    # From load (no observation yet: NaN), then over the last minute's requests.
    write_model(tmp_path, "metered", CONFIG, files={"1/model.py": MODEL})
    with ServerProcess([tmp_path], "--metrics-config=summary_latencies=true") as process:
        lines = scrape(process).splitlines()
        assert "# TYPE nv_inference_request_summary_us summary" in lines
        assert ('nv_inference_request_summary_us{model="metered",quantile="0.5",version="1"} '
                "NaN") in lines
        for _ in range(3):
            infer(process, 1.0)
        process.wait_metric("nv_inference_count", "metered", 3)
        text = scrape(process)
    for name in SUMMARIES:
        assert f'{name}_count{{model="metered",version="1"}} 3' in text
        for quantile in ("0.5", "0.9", "0.95", "0.99", "0.999"):
            value = _sample(text, f'{name}{{model="metered",quantile="{quantile}",version="1"}}')
            assert value >= 0  # a number now, not NaN
    assert "nv_cache_hit_summary_per_model" not in text  # the model has no cache
    assert "nv_inference_request_duration_us" in text  # the counters stay


def test_summaries_take_custom_quantiles_and_leave_the_counters_when_asked(
        tmp_path: Path) -> None:
    # Triton's L0_metrics values, a malformed error ("0.0.1") read as std::stod reads it.
    write_model(tmp_path, "metered", CONFIG, files={"1/model.py": MODEL})
    with ServerProcess([tmp_path], "--metrics-config=summary_latencies=true",
                       "--metrics-config=counter_latencies=false",
                       "--metrics-config=summary_quantiles=0.1:0.0.1,0.7:0.01,0.75:0.01"
                       ) as process:
        text = scrape(process)
    for quantile in ("0.1", "0.7", "0.75"):
        assert f'quantile="{quantile}"' in text
    assert 'quantile="0.5"' not in text
    assert "_duration_us" not in text


def test_no_summaries_by_default(server: ServerProcess) -> None:
    assert "_summary" not in scrape(server)


def _sample(text: str, series: str) -> float:
    line = next(line for line in text.splitlines() if line.startswith(series + " "))
    return float(line.rsplit(" ", 1)[1])


def test_a_cached_models_summaries_as_tritons(tmp_path: Path) -> None:
    # Triton 2.51 leaves the request summary out for a model with the response cache (its
    # DLIS-4762) and adds the cache's hit and miss summaries.
    write_model(tmp_path, "metered", CONFIG + "response_cache { enable: true }\n",
                files={"1/model.py": MODEL})
    with ServerProcess([tmp_path], "--metrics-config=summary_latencies=true",
                       "--cache-config=local,size=1048576") as process:
        for _ in range(2):  # a miss, then a hit
            infer(process, 2.0)
        process.wait_metric("nv_inference_request_success", "metered", 2)
        text = scrape(process)
    assert "nv_inference_request_summary_us" not in text
    assert 'nv_inference_queue_summary_us_count{model="metered",version="1"} 2' in text
    assert 'nv_cache_hit_summary_per_model_count{model="metered",version="1"} 1' in text
    assert 'nv_cache_miss_summary_per_model_count{model="metered",version="1"} 1' in text
