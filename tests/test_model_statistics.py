"""ModelStatistics' rules for what a backend reports (Triton's InferenceStatsAggregator rules):
per-response outcomes and their durations, timestamps out of order refused, a backend that
counts itself counted only from its reports, and a GPU instance's share kept per GPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from tritium.backend.handles import Backend, Model, ModelInstance
from tritium.backend.server_api import NoServer
from tritium.config import model_config_from_json
from tritium.errors import Code, TritonError
from tritium.request import InferenceRequest
from tritium.statistics import ModelStatistics


def _instance(statistics: ModelStatistics, kind: str = "KIND_CPU",
              device: int = 0) -> ModelInstance:
    config = model_config_from_json('{"name": "m", "backend": "b"}')
    model = Model(Backend("b", None, {}, server=NoServer()), config, 1, Path("."),
                  auto_complete=False, server=NoServer())
    return ModelInstance(model, "m_0", kind, device, config.instance_group.add(), statistics)


def _pair(duration) -> tuple[int, int]:
    return duration.count, duration.ns


def test_each_response_outcome_counts_as_triton_counts_it():
    statistics = ModelStatistics("m", "1")
    instance = _instance(statistics)
    instance.report_response_statistics(0, 100, 150, 400)  # success: infer 50, output 250
    instance.report_response_statistics(1, 100, 0, 130)  # empty: infer 30
    instance.report_response_statistics(1, 100, 120, 160, TritonError.invalid_arg("x"))
    instance.report_response_statistics(2, 100, 0, 110, TritonError.invalid_arg("x"))
    instance.report_response_statistics(2, 100, 0, 105, TritonError(Code.CANCELLED, "gone"))
    stats = statistics.snapshot().response_stats
    assert list(stats) == ["0", "1", "2"]
    assert _pair(stats["0"].success) == (1, 300)
    assert _pair(stats["0"].compute_infer) == (1, 50)
    assert _pair(stats["0"].compute_output) == (1, 250)
    assert _pair(stats["1"].empty_response) == (1, 30)
    assert _pair(stats["1"].fail) == (1, 60)  # a failure with outputs: infer 20, output 40
    assert _pair(stats["1"].compute_infer) == (2, 30 + 20)
    assert _pair(stats["1"].compute_output) == (1, 40)
    assert _pair(stats["2"].fail) == (1, 10)  # a failure without outputs: all infer
    assert _pair(stats["2"].compute_infer) == (1, 10)
    assert _pair(stats["2"].compute_output) == (0, 0)
    assert _pair(stats["2"].cancel) == (1, 5)  # a cancellation: nothing else


@pytest.mark.parametrize(("start", "output_start", "end", "message"), [
    (200, 100, 300, "Response start cannot happen after compute output start"),
    (100, 300, 200, "Compute output start cannot happen after response end"),
    (300, 0, 200, "Response start cannot happen after response end"),
])
def test_timestamps_out_of_order_are_refused(start, output_start, end, message):
    statistics = ModelStatistics("m", "1")
    with pytest.raises(TritonError, match=message) as refused:
        _instance(statistics).report_response_statistics(0, start, output_start, end)
    assert refused.value.code is Code.INVALID_ARG
    assert statistics.snapshot().response_stats == {}


def test_a_backend_that_counts_itself_is_counted_from_its_reports_only():
    statistics = ModelStatistics("m", "1")
    instance = _instance(statistics)
    request = InferenceRequest("m")
    request.statistics_by_backend = True
    request.queue_start_ns = 1
    statistics.record_request(request, True)  # its final response: nothing reported yet
    assert statistics.snapshot().inference_count == 0
    instance.report_statistics(request, True, 10, 20, 50, 110)
    instance.report_batch_statistics(1, 10, 20, 50, 110)
    snapshot = statistics.snapshot()
    assert (snapshot.inference_count, snapshot.execution_count) == (1, 1)
    assert _pair(snapshot.compute_input) == (1, 10)
    assert _pair(snapshot.compute_infer) == (1, 30)
    assert _pair(snapshot.compute_output) == (1, 60)
    assert _pair(snapshot.batch_stats[1].compute_infer) == (1, 30)
    instance.report_statistics(request, False, 0, 0, 0, 0)
    assert statistics.snapshot().fail_reasons["BACKEND"] == 1


def test_a_gpu_instance_s_share_is_kept_per_gpu_and_the_rest_is_what_no_gpu_did():
    statistics = ModelStatistics("m", "1")
    on_gpu = _instance(statistics, "KIND_GPU", 1)
    request = InferenceRequest("m")
    request.statistics_by_backend = True
    request.queue_start_ns = 1
    request.gpu = 1  # as the instance stamps it when it executes the request
    on_gpu.report_statistics(request, True, 10, 20, 50, 110)
    on_gpu.report_batch_statistics(1, 10, 20, 50, 110)
    on_gpu.report_statistics(request, False, 0, 0, 0, 0)
    on_cpu = InferenceRequest("m")
    on_cpu.queue_start_ns = 1
    _instance(statistics).report_statistics(on_cpu, True, 10, 15, 20, 30)
    _instance(statistics).report_batch_statistics(1, 10, 15, 20, 30)
    snapshot = statistics.snapshot()
    assert list(snapshot.gpus) == [1]
    gpu = snapshot.gpus[1]
    assert (gpu.success.count, gpu.inference_count, gpu.execution_count) == (1, 1, 1)
    assert _pair(gpu.compute_infer) == (1, 30)
    assert gpu.fail_reasons["BACKEND"] == 1
    rest = snapshot.without_gpus([1])
    assert (rest.success.count, rest.inference_count, rest.execution_count) == (1, 1, 1)
    assert _pair(rest.compute_infer) == (1, 5)
    assert rest.fail_reasons["BACKEND"] == 0
    everything = snapshot.without_gpus([])  # a GPU whose UUID the metrics do not know
    assert (everything.success.count, everything.execution_count) == (2, 2)
