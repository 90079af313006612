"""The statistics extension: /v2/models[/M[/versions/V]]/stats and gRPC ModelStatistics, with
Triton 2.51's fields, JSON shape and errors (compared side by side with tritonserver 2.51)."""

from __future__ import annotations

import asyncio
import shutil
import time

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as grpc_aio
import tritonclient.http as httpclient
import tritonclient.http.aio as http_aio
from tritonclient.utils import InferenceServerException

from support import PYTHON_MODELS
from support.models import identity_config, write_model
from support.raw_http import call
from support.server_process import ServerProcess

PYTHON_REPO = PYTHON_MODELS / "repo"

# Triton 2.51's members, in its order.
MODEL_STATS_KEYS = ["name", "version", "last_inference", "inference_count", "execution_count",
                    "inference_stats", "response_stats", "batch_stats", "memory_usage"]
INFERENCE_KEYS = ["success", "fail", "queue", "compute_input", "compute_infer", "compute_output",
                  "cache_hit", "cache_miss"]


@pytest.fixture(scope="module")
def stats_server(tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp("stats_repo")
    write_model(repo, "identity_fp32", identity_config("identity_fp32"))
    write_model(repo, "identity_versions", identity_config(
        "identity_versions", extra="version_policy: { all: {} }"), versions=(1, 2, 3))
    shutil.copytree(PYTHON_REPO / "error_model", repo / "error_model")
    with ServerProcess([repo]) as process:
        yield process


@pytest.fixture
def http(stats_server: ServerProcess):
    client = httpclient.InferenceServerClient(stats_server.http_url)
    yield client
    client.close()


@pytest.fixture
def grpc_client(stats_server: ServerProcess):
    client = grpcclient.InferenceServerClient(stats_server.grpc_url)
    yield client
    client.close()


def _get(server: ServerProcess, path: str, method: str = "GET") -> tuple[int, str, dict]:
    reply = call(server, method, path, None, timeout=10)
    return reply.status, reply.headers["content-type"], reply.json()


def _infer_fp32(http: httpclient.InferenceServerClient, rows: int) -> None:
    data = np.ones((rows, 3), np.float32)
    tensor = httpclient.InferInput("INPUT0", list(data.shape), "FP32")
    tensor.set_data_from_numpy(data)
    http.infer("identity_fp32", [tensor])


def _error_model(http: httpclient.InferenceServerClient, mode: int) -> None:
    tensor = httpclient.InferInput("MODE", [1], "INT32")
    tensor.set_data_from_numpy(np.array([mode], np.int32))
    http.infer("error_model", [tensor])


def _stats(http: httpclient.InferenceServerClient, model: str, version: str = "") -> dict:
    (entry,) = http.get_inference_statistics(model, version)["model_stats"]
    return entry


def _stats_after(http: httpclient.InferenceServerClient, model: str, executions: int) -> dict:
    """The statistics once `executions` executes are recorded: an instance records its
    execute after the backend returned, which may be just after the client got its answer."""
    deadline = time.monotonic() + 10
    while (entry := _stats(http, model))["execution_count"] < executions:
        assert time.monotonic() < deadline, f"{model}: {entry['execution_count']} executions"
        time.sleep(0.01)
    return entry


def test_every_ready_version_is_listed_with_tritons_members(stats_server) -> None:
    status, content_type, body = _get(stats_server, "/v2/models/stats")
    assert (status, content_type) == (200, "application/json")
    listed = [(s["name"], s["version"]) for s in body["model_stats"]]
    assert listed == [("error_model", "1"), ("identity_fp32", "1"), ("identity_versions", "1"),
                      ("identity_versions", "2"), ("identity_versions", "3")]
    for entry in body["model_stats"]:
        assert list(entry) == MODEL_STATS_KEYS
        assert list(entry["inference_stats"]) == INFERENCE_KEYS
        assert entry["response_stats"] == {} and entry["memory_usage"] == []


def test_successful_requests_count_and_time(http, grpc_client) -> None:
    before = _stats(http, "identity_fp32")
    started_ms = time.time() * 1000
    _infer_fp32(http, rows=2)
    _infer_fp32(http, rows=2)
    _infer_fp32(http, rows=1)
    after = _stats_after(http, "identity_fp32", before["execution_count"] + 3)
    stats, old = after["inference_stats"], before["inference_stats"]
    assert stats["success"]["count"] == old["success"]["count"] + 3
    assert stats["success"]["ns"] > old["success"]["ns"]
    for name in ("queue", "compute_input", "compute_infer", "compute_output"):
        assert stats[name]["count"] == old[name]["count"] + 3
    assert stats["fail"] == old["fail"]
    # inference_count counts batch rows, execution_count backend executions.
    assert after["inference_count"] == before["inference_count"] + 5
    assert after["execution_count"] == before["execution_count"] + 3
    batches = {b["batch_size"]: b for b in after["batch_stats"]}
    old_batches = {b["batch_size"]: b for b in before["batch_stats"]}
    old_two = old_batches.get(2, {"compute_infer": {"count": 0}})
    assert batches[2]["compute_infer"]["count"] == old_two["compute_infer"]["count"] + 2
    assert started_ms - 1000 <= after["last_inference"] <= time.time() * 1000 + 1000
    # gRPC reports the same numbers.
    over_grpc = grpc_client.get_inference_statistics("identity_fp32", as_json=True)
    (entry,) = over_grpc["model_stats"]
    assert int(entry["inference_count"]) == after["inference_count"]
    assert int(entry["inference_stats"]["success"]["count"]) == stats["success"]["count"]


def test_a_failed_execution_counts_as_a_failure(http, grpc_client) -> None:
    before = grpc_client.get_inference_statistics("error_model").model_stats[0]
    _error_model(http, 0)
    with pytest.raises(InferenceServerException, match="mode 3 raised"):
        _error_model(http, 3)
    _stats_after(http, "error_model", before.execution_count + 2)
    after = grpc_client.get_inference_statistics("error_model").model_stats[0]
    assert after.inference_stats.success.count == before.inference_stats.success.count + 1
    assert after.inference_stats.fail.count == before.inference_stats.fail.count + 1
    assert after.inference_stats.fail.ns > before.inference_stats.fail.ns
    assert after.execution_count == before.execution_count + 2


def test_a_refused_request_is_not_counted(http) -> None:
    """Like Triton, a request refused before it reaches the model (a missing input) counts as
    neither success nor failure."""
    before = _stats(http, "identity_fp32")
    with pytest.raises(InferenceServerException):
        http.infer("identity_fp32", [], outputs=None)
    after = _stats(http, "identity_fp32")
    assert after["inference_stats"]["fail"] == before["inference_stats"]["fail"]
    assert after["inference_stats"]["success"] == before["inference_stats"]["success"]


def test_versions(stats_server, http) -> None:
    assert [s["version"] for s in
            http.get_inference_statistics("identity_versions")["model_stats"]] == ["1", "2", "3"]
    assert _stats(http, "identity_versions", "2")["version"] == "2"
    status, _, body = _get(stats_server, "/v2/models/identity_versions/versions/3/stats")
    assert status == 200 and [s["version"] for s in body["model_stats"]] == ["3"]


@pytest.mark.parametrize("path, status, message", [
    ("/v2/models/nope/stats", 400, "requested model 'nope' is not available"),
    ("/v2/models/identity_versions/versions/7/stats", 400,
     "requested model version is not available for model 'identity_versions'"),
    ("/v2/models/identity_fp32/versions/x/stats", 404, "Not Found"),
    ("/v2/models/identity_fp32/versions/-1/stats", 404, "Not Found"),
    ("/v2/models/stats/x", 404, "Not Found"),
])
def test_http_errors(stats_server, path, status, message) -> None:
    assert _get(stats_server, path)[0::2] == (status, {"error": message})


@pytest.mark.parametrize("path", ["/v2/models/stats", "/v2/models/identity_fp32/stats"])
def test_only_get_is_allowed(stats_server, path) -> None:
    assert _get(stats_server, path, "POST") == (405, "application/json",
                                                {"error": "Method Not Allowed"})


@pytest.mark.parametrize("name, version, message", [
    ("nope", "", "requested model 'nope' is not available"),
    ("identity_versions", "7",
     "requested model version is not available for model 'identity_versions'"),
    ("identity_fp32", "x", "failed to get model version from specified version string 'x' "
     "(details: stol), version should be an integral value > 0"),
    ("identity_fp32", "-1",
     "invalid model version specified '-1' , version should be an integral value > 0"),
])
def test_grpc_errors(grpc_client, name, version, message) -> None:
    with pytest.raises(InferenceServerException) as info:
        grpc_client.get_inference_statistics(name, version)
    assert info.value.status() == "StatusCode.INVALID_ARGUMENT"
    assert info.value.message() == message


def test_asyncio_clients(stats_server) -> None:
    async def read() -> tuple[dict, dict]:
        http = http_aio.InferenceServerClient(stats_server.http_url)
        grpc = grpc_aio.InferenceServerClient(stats_server.grpc_url)
        try:
            return (await http.get_inference_statistics("identity_fp32"),
                    await grpc.get_inference_statistics("identity_fp32", as_json=True))
        finally:
            await http.close()
            await grpc.close()

    over_http, over_grpc = asyncio.run(read())
    assert over_http["model_stats"][0]["name"] == over_grpc["model_stats"][0]["name"]
    assert over_http["model_stats"][0]["inference_count"] == int(
        over_grpc["model_stats"][0].get("inference_count", 0))


def test_grpc_without_a_name_lists_every_model_whatever_the_version(grpc_client) -> None:
    assert len(grpc_client.get_inference_statistics("", "7").model_stats) == 5
    with pytest.raises(InferenceServerException, match="version string 'x'"):
        grpc_client.get_inference_statistics("", "x")
