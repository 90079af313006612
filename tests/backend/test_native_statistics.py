"""Statistics of compiled backends: counted from what the backend reports, as Triton counts them.

The backend (tests/support/native_backends/counting.cc) reports made-up durations, so what the
statistics extension answers can be checked to the nanosecond over HTTP and gRPC: a backend
that reports nothing shows no inference at all (NVIDIA's minimal backend on Triton); a batch
report makes the execution count and batch statistics; response statistics (Triton's
TRITONBACKEND_ModelInstanceResponseStatistics*) appear per response index; memory the model and
its instances report holding is summed per memory type and device.
"""

from __future__ import annotations

import queue

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.native_fixtures import compile_backends, write_model
from support.server_process import ServerProcess

IO = ('input [ { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] } ]\n'
      'output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n')


def _reporting(mode: str) -> str:
    return f'parameters {{ key: "report" value: {{ string_value: "{mode}" }} }}\n'


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    base = tmp_path_factory.mktemp("native_statistics")
    backends = compile_backends(base / "backends", {"native_counting": "counting"})
    repo = base / "models"
    backend = 'backend: "native_counting"\n'
    write_model(repo, "counting_none", backend + IO + _reporting("none"))
    write_model(repo, "counting_batch", backend + IO + _reporting("batch"))
    write_model(repo, "counting_responses", backend + IO + _reporting("responses")
                + "model_transaction_policy { decoupled: true }\n")
    write_model(repo, "counting_sequence", backend + IO + _reporting("batch")
                + "max_batch_size: 2\nsequence_batching { direct { } }\n")
    write_model(repo, "counting_memory", backend + IO + _reporting("none")
                + 'parameters { key: "memory_usage" value: { string_value: "1" } }\n'
                + "instance_group [ { kind: KIND_CPU count: 2 } ]\n")
    return backends, repo


# Reports that travel with a response Execute sent from its own thread are read by the hot
# path (the CPython extension) or by ctypes: both are served.
@pytest.fixture(scope="module", params=["hotpath", "ctypes"])
def server(request, repository):
    backends, repo = repository
    env = {"TRITIUM_NATIVE_HOTPATH": "1" if request.param == "hotpath" else "0"}
    with ServerProcess([repo], f"--backend-directory={backends}", env=env) as process:
        yield process


@pytest.fixture(scope="module")
def http(server):
    return httpclient.InferenceServerClient(server.http_url)


@pytest.fixture(scope="module")
def grpc(server):
    return grpcclient.InferenceServerClient(server.grpc_url)


def _infer(client, module, model: str, value: int):
    tensor = module.InferInput("IN", [1], "INT32")
    tensor.set_data_from_numpy(np.array([value], np.int32))
    return client.infer(model, [tensor])


def _grpc_stats(grpc, model: str) -> dict:
    """gRPC ModelStatistics as JSON, int64 fields read back as numbers."""
    stats = grpc.get_inference_statistics(model, as_json=True)["model_stats"][0]

    def numbers(value):
        if isinstance(value, dict):
            return {k: numbers(v) for k, v in value.items()}
        if isinstance(value, list):
            return [numbers(v) for v in value]
        return int(value) if isinstance(value, str) and value.isdigit() else value

    return numbers(stats)


def _duration(stats: dict, name: str) -> tuple[int, int]:
    value = stats.get(name, {})
    return int(value.get("count", 0)), int(value.get("ns", 0))


def test_a_backend_that_reports_nothing_counts_nothing(http, grpc):
    for value in range(3):
        assert int(_infer(http, httpclient, "counting_none", value).as_numpy("OUT")[0]) == value
    http_stats = http.get_inference_statistics("counting_none")["model_stats"][0]
    for stats in (http_stats, _grpc_stats(grpc, "counting_none")):
        assert stats.get("inference_count", 0) == 0
        assert stats.get("execution_count", 0) == 0
        assert _duration(stats["inference_stats"], "success") == (0, 0)
        assert stats.get("batch_stats", []) == []


def test_request_and_batch_reports_make_the_counts_and_durations(http, grpc):
    # Even values are reported before their response is sent, odd ones after.
    for value in (2, 3, 4, 5):
        assert int(_infer(http, httpclient, "counting_batch", value).as_numpy("OUT")[0]) == value
    with pytest.raises(InferenceServerException, match="a negative value"):
        _infer(grpc, grpcclient, "counting_batch", -1)
    http_stats = http.get_inference_statistics("counting_batch")["model_stats"][0]
    for stats in (http_stats, _grpc_stats(grpc, "counting_batch")):
        assert stats["inference_count"] == 4
        assert stats["execution_count"] == 5
        inference = stats["inference_stats"]
        assert _duration(inference, "success")[0] == 4
        assert _duration(inference, "fail")[0] == 1
        # The backend's own timestamps, not the server's clock.
        assert _duration(inference, "compute_input") == (4, 4 * 1000)
        assert _duration(inference, "compute_infer") == (4, 4 * 2000)
        assert _duration(inference, "compute_output") == (4, 4 * 3000)
        [batch] = stats["batch_stats"]
        assert int(batch["batch_size"]) == 1
        assert _duration(batch, "compute_input") == (5, 5 * 1000)
        assert _duration(batch, "compute_infer") == (5, 5 * 2000)
        assert _duration(batch, "compute_output") == (5, 5 * 3000)


def test_null_requests_of_the_sequence_batcher_are_not_counted(http):
    """Under `direct`, a slot without a request gets a null one; the backend reports every
    request of its batch, but, as in Triton (null requests collect no statistics), only the
    client's requests count."""
    steps = [(1, True, False, 2), (2, True, False, 4), (1, False, True, 6), (2, False, True, 8)]
    for sequence_id, start, end, value in steps:
        tensor = httpclient.InferInput("IN", [1, 1], "INT32")
        tensor.set_data_from_numpy(np.array([[value]], np.int32))
        result = http.infer("counting_sequence", [tensor], sequence_id=sequence_id,
                            sequence_start=start, sequence_end=end)
        assert int(result.as_numpy("OUT").reshape(-1)[0]) == value
    stats = http.get_inference_statistics("counting_sequence")["model_stats"][0]
    assert stats["inference_count"] == 4
    assert _duration(stats["inference_stats"], "success")[0] == 4
    # Sequence 2 runs in slot 1, after a null request in slot 0: batches of 2.
    assert stats["execution_count"] == 4


def _stream(grpc, model: str, count: int) -> list:
    """Results of one streamed request, up to its (asked for) empty final response."""
    results: queue.Queue = queue.Queue()
    grpc.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        tensor = grpcclient.InferInput("IN", [1], "INT32")
        tensor.set_data_from_numpy(np.array([count], np.int32))
        grpc.async_stream_infer(model, [tensor], enable_empty_final_response=True)
        got = []
        while True:
            result, error = results.get(timeout=30)
            got.append(error if error is not None else result)
            if error is not None:
                return got
            final = result.get_response().parameters.get("triton_final_response")
            if final is not None and final.bool_param:
                return got
    finally:
        grpc.stop_stream()


def test_response_statistics_per_response_index(http, grpc):
    for _ in range(2):
        got = _stream(grpc, "counting_responses", 3)
        assert [int(r.as_numpy("OUT")[0]) for r in got[:3]] == [0, 1, 2]
    [error] = _stream(grpc, "counting_responses", -1)
    assert "a negative count" in str(error)
    http_stats = http.get_inference_statistics("counting_responses")["model_stats"][0]
    for stats in (http_stats, _grpc_stats(grpc, "counting_responses")):
        responses = stats["response_stats"]
        assert sorted(responses) == ["0", "1", "2", "3"]
        first = responses["0"]
        assert _duration(first, "success") == (2, 2 * 3000)
        assert _duration(first, "fail") == (1, 700)
        assert _duration(first, "compute_infer") == (3, 2 * 1000 + 700)
        assert _duration(first, "compute_output") == (2, 2 * 2000)
        for index in ("1", "2"):
            assert _duration(responses[index], "success") == (2, 2 * 3000)
            assert _duration(responses[index], "compute_infer") == (2, 2 * 1000)
            assert _duration(responses[index], "compute_output") == (2, 2 * 2000)
            assert _duration(responses[index], "fail") == (0, 0)
        # The flags-only FINAL, reported as an empty response.
        empty = responses["3"]
        assert _duration(empty, "empty_response") == (2, 2 * 500)
        assert _duration(empty, "compute_infer") == (2, 2 * 500)
        assert _duration(empty, "success") == (0, 0)
        assert _duration(empty, "cancel") == (0, 0)


def test_memory_the_model_and_its_instances_report_is_summed_per_memory_and_device(http, grpc):
    """Triton's AccumulatedMemoryUsage: the model's last report (it replaced the first) plus
    each instance's, by memory type then device."""
    expected = [{"type": "CPU_PINNED", "id": 0, "byte_size": 128},
                {"type": "GPU", "id": 0, "byte_size": 2000}]
    stats = http.get_inference_statistics("counting_memory")["model_stats"][0]
    assert stats["memory_usage"] == expected
    usage = grpc.get_inference_statistics("counting_memory").model_stats[0].memory_usage
    assert [{"type": u.type, "id": u.id, "byte_size": u.byte_size} for u in usage] == expected
    assert http.get_inference_statistics("counting_none")["model_stats"][0]["memory_usage"] == []
