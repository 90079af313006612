"""The gRPC frontend's health, metadata and configuration RPCs, by tritonclient and raw stubs.

They talk to the shared `server` process (identity models of tests/support/models.py). Inference
is in test_grpc_infer.py, bad requests in test_grpc_bad_requests.py, a GrpcFrontend in-process
over a stand-in server in test_grpc_frontend_in_process.py; their shared fixtures in
tests/support/grpc_fixtures.py.
"""

from __future__ import annotations

import grpc
import pytest
from tritonclient.grpc import service_pb2 as pb
from tritonclient.utils import InferenceServerException

from support.grpc_fixtures import SERVING, channel, client, stub  # noqa: F401

# -- health and metadata -----------------------------------------------------------------------


def test_server_live_ready_and_metadata(client):
    assert client.is_server_live()
    assert client.is_server_ready()
    meta = client.get_server_metadata(as_json=True)
    assert meta["name"] == "triton"
    assert meta["version"] == "2.51.0"
    assert "binary_tensor_data" in meta["extensions"]


def test_model_ready(client):
    assert client.is_model_ready("identity_fp32")
    assert client.is_model_ready("identity_versions", "2")
    assert not client.is_model_ready("no_such_model")
    assert not client.is_model_ready("identity_fp32", "9")


@pytest.mark.parametrize("version", ["abc", "99999999999999999999"])
def test_model_ready_with_a_version_that_is_not_a_number(stub, version):
    # Past int64, std::stol fails in Triton as for text.
    with pytest.raises(grpc.RpcError) as info:
        stub.ModelReady(pb.ModelReadyRequest(name="identity_fp32", version=version))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details() == (
        f"failed to get model version from specified version string '{version}' (details: "
        "stol), version should be an integral value > 0")


def test_model_metadata(client):
    meta = client.get_model_metadata("identity_fp32", as_json=True)
    assert meta["name"] == "identity_fp32"
    assert meta["versions"] == ["1"]
    assert meta["inputs"] == [{"name": "INPUT0", "datatype": "FP32", "shape": ["-1", "-1"]}]
    assert meta["outputs"] == [{"name": "OUTPUT0", "datatype": "FP32", "shape": ["-1", "-1"]}]
    nobatch = client.get_model_metadata("identity_nobatch", as_json=True)
    assert nobatch["inputs"][0]["shape"] == ["2", "3"]
    versions = client.get_model_metadata("identity_versions", as_json=True)
    assert versions["versions"] == ["1", "2", "3"]


def test_model_config(client):
    config = client.get_model_config("identity_int32", as_json=True)["config"]
    assert config["name"] == "identity_int32"
    assert config["max_batch_size"] == 8
    assert [i["name"] for i in config["input"]] == ["INPUT0", "INPUT1"]
    assert config["input"][0]["data_type"] == "TYPE_INT32"
    assert config["input"][0]["dims"] == ["16"]
    typed = client.get_model_config("identity_fp32")
    assert typed.config.input[0].name == "INPUT0"


@pytest.mark.parametrize("call", ["get_model_metadata", "get_model_config"])
def test_metadata_and_config_of_unknown_model_or_version(client, call):
    with pytest.raises(InferenceServerException) as info:
        getattr(client, call)("no_such_model")
    assert info.value.status() == "StatusCode.NOT_FOUND"
    assert "Request for unknown model: 'no_such_model' is not found" in info.value.message()
    with pytest.raises(InferenceServerException) as info:
        getattr(client, call)("identity_fp32", "9")
    assert info.value.status() == "StatusCode.NOT_FOUND"
    assert "'identity_fp32' version 9 is not found" in info.value.message()


def test_health_check_answers_serving(channel):
    check = channel.unary_unary(
        "/grpc.health.v1.Health/Check",
        request_serializer=lambda b: b,
        response_deserializer=lambda b: b,
    )
    assert check(b"") == SERVING
    service = b"inference.GRPCInferenceService"
    assert check(b"\x0a" + bytes([len(service)]) + service) == SERVING


def test_read_only_extension_rpcs_answer(stub):
    """Every read-only extension RPC answers on a default server (none is UNIMPLEMENTED)."""
    statistics = stub.ModelStatistics(pb.ModelStatisticsRequest())
    assert "identity_fp32" in {m.name for m in statistics.model_stats}
    index = stub.RepositoryIndex(pb.RepositoryIndexRequest())
    assert "identity_fp32" in {m.name for m in index.models}
    assert stub.SystemSharedMemoryStatus(pb.SystemSharedMemoryStatusRequest()).regions == {}
    assert stub.CudaSharedMemoryStatus(pb.CudaSharedMemoryStatusRequest()).regions == {}
    assert stub.TraceSetting(pb.TraceSettingRequest()).settings["trace_level"].value == ["OFF"]
    assert "log_verbose_level" in stub.LogSettings(pb.LogSettingsRequest()).settings
