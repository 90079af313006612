"""The HTTP/REST frontend's health, metadata and configuration routes, by raw HTTP and tritonclient.

They talk to the shared `server` process (identity models of tests/support/models.py); the expected
texts are what Triton 2.51 answers for the same requests (compared with the reference server).
Inference is in test_http_infer.py, malformed requests in test_http_bad_requests.py, the frontend's
ports and graceful stop in test_http_frontend_in_process.py.
"""

from __future__ import annotations

import pytest
from tritonclient.utils import InferenceServerException

from support.http_infer_requests import FP32
from support.raw_http import call

# -- health, metadata, configuration -------------------------------------------------------


def test_health_live_and_ready(server):
    for path in ("/v2/health/live", "/v2/health/ready"):
        reply = call(server, "GET", path)
        assert (reply.status, reply.body) == (200, b"")
        reply = call(server, "POST", path)
        assert reply.status == 405
        assert reply.error == "Method Not Allowed"


def test_health_with_tritonclient(http_client):
    assert http_client.is_server_live()
    assert http_client.is_server_ready()


def test_server_metadata(server, http_client):
    reply = call(server, "GET", "/v2")
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/json"
    document = reply.json()
    assert document["name"] == "triton"
    assert document["version"] == "2.51.0"  # the Triton release Tritium serves as
    # Triton 2.51's list, without the shared-memory pair (off unless --allow-client-shm).
    assert document["extensions"] == [
        "classification", "sequence", "model_repository", "model_repository(unload_dependents)",
        "schedule_policy", "model_configuration", "binary_tensor_data", "parameters",
        "statistics", "trace", "logging"]
    assert http_client.get_server_metadata() == document


def test_model_metadata(server, http_client):
    reply = call(server, "GET", "/v2/models/identity_fp32")
    assert reply.status == 200
    assert reply.json() == {
        "name": "identity_fp32",
        "versions": ["1"],
        "platform": "identity",
        "inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [-1, -1]}],
        "outputs": [{"name": "OUTPUT0", "datatype": "FP32", "shape": [-1, -1]}],
    }
    nobatch = http_client.get_model_metadata("identity_nobatch")
    assert nobatch["inputs"] == [{"name": "INPUT0", "datatype": "FP32", "shape": [2, 3]}]
    versioned = http_client.get_model_metadata("identity_versions", "2")
    assert versioned["name"] == "identity_versions"
    assert "2" in versioned["versions"]


def test_model_metadata_unknown_model_and_version(server, http_client):
    reply = call(server, "GET", "/v2/models/nope")
    assert reply.status == 404
    assert reply.error == "Request for unknown model: 'nope' is not found"
    reply = call(server, "GET", "/v2/models/identity_versions/versions/7")
    assert reply.status == 404
    assert reply.error == "Request for unknown model: 'identity_versions' version 7 is not found"
    with pytest.raises(InferenceServerException, match="unknown model: 'nope'"):
        http_client.get_model_metadata("nope")


def test_model_ready(server, http_client):
    assert (call(server, "GET", "/v2/models/identity_fp32/ready").status) == 200
    for version in ("1", "2", "3"):
        reply = call(server, "GET", f"/v2/models/identity_versions/versions/{version}/ready")
        assert (reply.status, reply.body) == (200, b"")
    for path in ("/v2/models/identity_fp32/versions/7/ready", "/v2/models/nope/ready"):
        reply = call(server, "GET", path)
        assert reply.status == 400
        assert reply.error == "Model version not ready"
    assert http_client.is_model_ready("identity_versions", "2")
    assert not http_client.is_model_ready("nope")


def test_model_config(server, http_client):
    reply = call(server, "GET", "/v2/models/identity_fp32/config")
    assert reply.status == 200
    config = reply.json()
    assert config["name"] == "identity_fp32"
    assert config["backend"] == "identity"
    assert config["max_batch_size"] == 8
    assert config["input"][0]["name"] == "INPUT0"
    assert config["input"][0]["data_type"] == "TYPE_FP32"
    assert config["input"][0]["dims"] == [-1]
    assert config["output"][0]["data_type"] == "TYPE_FP32"
    assert http_client.get_model_config("identity_versions", "3")["name"] == "identity_versions"
    reply = call(server, "GET", "/v2/models/nope/config")
    assert reply.status == 404
    assert reply.error == "Request for unknown model: 'nope' is not found"


@pytest.mark.parametrize("method, path, status, message", [
    ("GET", "/v2/foo", 404, "Not Found"),
    ("GET", "/", 404, "Not Found"),
    ("GET", "/v2/", 404, "Not Found"),
    ("GET", "/v2/models/identity_fp32/", 404, "Not Found"),
    ("GET", "/v2/models/identity_fp32/versions/abc", 404, "Not Found"),
    ("GET", "/v2/models/identity_fp32/nonsense", 404, "Not Found"),
    ("DELETE", "/v2/models/identity_fp32", 405, "Method Not Allowed"),
    ("GET", FP32, 405, "Method Not Allowed"),
    ("POST", "/v2/models/identity_fp32/config", 405, "Method Not Allowed"),
    ("POST", "/v2", 405, "Method Not Allowed"),
])
def test_unknown_routes_and_methods(server, method, path, status, message):
    reply = call(server, method, path)
    assert reply.status == status
    assert reply.error == message


def test_query_string_is_ignored(server):
    assert call(server, "GET", "/v2/health/ready?verbose=1").status == 200


