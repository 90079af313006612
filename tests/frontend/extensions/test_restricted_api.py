"""--http-restricted-api / --grpc-restricted-protocol: Triton 2.51's groups, answers and flag
errors (compared side by side with tritonserver, one key per group)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc
from tritonclient.utils import InferenceServerException

from support import ROOT
from support.models import identity_config, write_model
from support.raw_http import call
from support.server_process import ServerProcess
from tritium.frontend.extensions.restricted_api import GRPC_METHODS, http_group

MODEL = "identity_fp32"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("restricted_repo")
    write_model(repo, MODEL, identity_config(MODEL))
    return repo


@pytest.fixture(scope="module")
def restricted(repo: Path):
    # HTTP health stays open: the test harness polls it to see the server start.
    with ServerProcess(
        [repo],
        "--http-restricted-api=statistics,logging,trace,model-config:Admin-Key=secret",
        "--http-restricted-api=inference:infer-key=go",
        "--grpc-restricted-protocol=health,inference:grpc-key=go",
        "--grpc-restricted-protocol=statistics:admin-key=secret",
    ) as process:
        yield process


def _call(server: ServerProcess, path: str, method: str = "GET", body: bytes | None = None,
          headers: dict[str, str] | None = None) -> tuple[int, str, bytes]:
    reply = call(server, method, path, body, headers, timeout=10)
    return reply.status, reply.headers["content-type"], reply.body


@pytest.mark.parametrize("path, group", [
    ("/v2/health/live", "health"), ("/v2/health/ready", "health"),
    ("/v2", "metadata"), (f"/v2/models/{MODEL}", "metadata"),
    (f"/v2/models/{MODEL}/versions/1", "metadata"),
    (f"/v2/models/{MODEL}/ready", "health"), (f"/v2/models/{MODEL}/versions/1/ready", "health"),
    (f"/v2/models/{MODEL}/config", "model-config"),
    (f"/v2/models/{MODEL}/infer", "inference"), (f"/v2/models/{MODEL}/generate", "inference"),
    (f"/v2/models/{MODEL}/generate_stream", "inference"),
    ("/v2/models/stats", "statistics"), (f"/v2/models/{MODEL}/stats", "statistics"),
    ("/v2/systemsharedmemory/status", "shared-memory"),
    ("/v2/systemsharedmemory/region/r/register", "shared-memory"),
    ("/v2/cudasharedmemory/region/r/unregister", "shared-memory"),
    ("/v2/repository/index", "model-repository"),
    (f"/v2/repository/models/{MODEL}/load", "model-repository"),
    (f"/v2/repository/models/{MODEL}/unload", "model-repository"),
    ("/v2/trace/setting", "trace"), (f"/v2/models/{MODEL}/trace/setting", "trace"),
    ("/v2/logging", "logging"),
    ("/v2/bogus", None), (f"/v2/models/{MODEL}/bogus", None), ("/metrics", None),
    (f"/v2/models/{MODEL}/versions/x/stats", None),
    (f"/v2/models/{MODEL}/versions/1/trace/setting", None),
])
def test_every_triton_endpoint_has_tritons_group(path, group) -> None:
    assert http_group(path) == group


def test_every_grpc_method_has_a_group() -> None:
    methods = pb.DESCRIPTOR.services_by_name["GRPCInferenceService"].methods
    assert {m.name for m in methods} | {"Check"} == set(GRPC_METHODS)


@pytest.mark.parametrize("path, method, key", [
    ("/v2/models/stats", "GET", "Admin-Key"),
    (f"/v2/models/{MODEL}/stats", "GET", "Admin-Key"),
    ("/v2/models/nope/stats", "GET", "Admin-Key"),  # refused before the model is looked up
    ("/v2/models/stats", "POST", "Admin-Key"),  # ... and before the method
    ("/v2/logging", "POST", "Admin-Key"),
    ("/v2/trace/setting", "GET", "Admin-Key"),
    (f"/v2/models/{MODEL}/config", "GET", "Admin-Key"),
    (f"/v2/models/{MODEL}/infer", "POST", "infer-key"),
])
def test_http_refuses_without_the_header(restricted, path, method, key) -> None:
    for headers in ({}, {key: "wrong"}):
        assert _call(restricted, path, method, b"{}" if method == "POST" else None,
                     headers) == (
            403, "text/plain",
            b'{"error":"This API is restricted, expecting header \'%s\'"}' % key.encode())


def test_http_serves_with_the_header(restricted) -> None:
    status, _, body = _call(restricted, "/v2/models/stats", headers={"admin-key": "secret"})
    assert status == 200 and json.loads(body)["model_stats"][0]["name"] == MODEL
    client = httpclient.InferenceServerClient(restricted.http_url)
    assert client.get_log_settings(headers={"Admin-Key": "secret"})["log_info"] is True
    data = np.arange(3, dtype=np.float32).reshape(1, 3)
    tensor = httpclient.InferInput("INPUT0", [1, 3], "FP32")
    tensor.set_data_from_numpy(data)
    result = client.infer(MODEL, [tensor], headers={"infer-key": "go"})
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)
    with pytest.raises(InferenceServerException, match="expecting header 'infer-key'"):
        client.infer(MODEL, [tensor])
    # Groups nobody restricted stay open.
    assert client.is_server_live() and client.get_server_metadata()["name"] == "triton"
    assert client.get_model_metadata(MODEL)["name"] == MODEL
    assert _call(restricted, "/v2/bogus")[0] == 404


def test_grpc_refuses_without_the_header(restricted) -> None:
    client = grpcclient.InferenceServerClient(restricted.grpc_url)
    for refused in (client.is_server_live, lambda: client.is_model_ready(MODEL),
                    lambda: client.get_inference_statistics(MODEL)):
        with pytest.raises(InferenceServerException) as info:
            refused()
        assert info.value.status() == "StatusCode.UNAVAILABLE"
        assert info.value.message().startswith(
            "This protocol is restricted, expecting header 'triton-grpc-protocol-")
    with pytest.raises(InferenceServerException) as info:
        client.get_inference_statistics(MODEL, headers={"admin-key": "secret"})
    assert info.value.message() == (
        "This protocol is restricted, expecting header 'triton-grpc-protocol-admin-key'")
    # Open groups.
    assert client.get_server_metadata().name == "triton"
    assert client.get_model_config(MODEL).config.name == MODEL


def test_grpc_serves_with_the_prefixed_header(restricted) -> None:
    client = grpcclient.InferenceServerClient(restricted.grpc_url)
    go = {"triton-grpc-protocol-grpc-key": "go"}
    assert client.is_server_live(headers=go)
    stats = client.get_inference_statistics(
        MODEL, headers={"triton-grpc-protocol-admin-key": "secret"})
    assert stats.model_stats[0].name == MODEL
    data = np.ones((1, 3), np.float32)
    tensor = grpcclient.InferInput("INPUT0", [1, 3], "FP32")
    tensor.set_data_from_numpy(data)
    assert client.infer(MODEL, [tensor], headers=go).as_numpy("OUTPUT0").tolist() == [[1, 1, 1]]


def test_grpc_streams_and_health_checks_are_restricted(restricted) -> None:
    with grpc.insecure_channel(restricted.grpc_url) as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            list(stub.ModelStreamInfer(iter([pb.ModelInferRequest(model_name=MODEL)])))
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        check = channel.unary_unary("/grpc.health.v1.Health/Check")
        with pytest.raises(grpc.RpcError) as info:
            check(b"")
        assert info.value.details() == (
            "This protocol is restricted, expecting header 'triton-grpc-protocol-grpc-key'")
        assert check(b"", metadata=[("triton-grpc-protocol-grpc-key", "go")]) == b"\x08\x01"


@pytest.mark.parametrize("flag, message", [
    ("--http-restricted-api=bogus:k=v", "unknown restricted api 'bogus'"),
    ("--http-restricted-api=statistics,k=v",
     "--http-restricted-api option format is '<config name>:<setting>=<value>'. "
     "Got statistics,k=v"),
    ("--grpc-restricted-protocol=health:k", "--grpc-restricted-protocol option format is"),
    ("--grpc-restricted-protocol=model-reposit:k=v",
     "unknown restricted protocol 'model-reposit'"),
])
def test_bad_flags_stop_the_server(repo: Path, flag: str, message: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tritium", "serve", f"--model-repository={repo}", flag],
        capture_output=True, text=True, timeout=60,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 1
    assert f'Bad option: "{flag.split("=")[0]}".' in result.stderr
    assert message in result.stderr


def test_a_group_restricted_twice_stops_the_server(repo: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tritium", "serve", f"--model-repository={repo}",
         "--http-restricted-api=statistics:k=v", "--http-restricted-api=logging,statistics:a=b"],
        capture_output=True, text=True, timeout=60, env={"PYTHONPATH": str(ROOT / "src")},
    )
    assert result.returncode == 1
    assert "restricted api 'statistics' can not be specified in multiple config groups" \
        in result.stderr
