"""Triton's Vertex AI endpoint: health and predict routes, the Content-Type framing of binary
bodies, redirects to the KServe routes, and the start-up refusals, with Triton 2.51's answers
(the same requests as its qa/L0_vertex_ai, which passes against this endpoint)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tritonclient.http as httpclient

from support.cloud_servers import (
    INT32_MODEL,
    Endpoint,
    cloud_port,
    int32_repository,
    int32_request,
    send,
    wait_answering,
)
from support.server_process import ServerProcess

ROUTES = {"AIP_PREDICT_ROUTE": "/predict", "AIP_HEALTH_ROUTE": "/health"}
BINARY = "application/vnd.vertex-ai-triton.binary+json;json-header-size="
REDIRECT = "X-Vertex-Ai-Triton-Redirect"


@pytest.fixture(scope="module")
def vertex(tmp_path_factory):
    """A server with HTTP and Vertex AI; the default model named, a second model beside it."""
    repo = int32_repository(tmp_path_factory.mktemp("vertex"), INT32_MODEL, "other_int32")
    endpoint = Endpoint(cloud_port())
    server = ServerProcess([repo], "--allow-vertex-ai=true", f"--vertex-ai-port={endpoint.port}",
                           f"--vertex-ai-default-model={INT32_MODEL}", env=ROUTES)
    with server:
        wait_answering(endpoint, "/health", server)
        yield endpoint, server


def test_health_route_answers_readiness_to_get_only(vertex):
    endpoint, _ = vertex
    assert send(endpoint, "GET", "/health").status == 200
    reply = send(endpoint, "POST", "/health", body=b"")
    assert reply.status == 405 and reply.error == "Method Not Allowed"


def test_predict_infers_the_default_model_from_json(vertex):
    endpoint, _ = vertex
    reply = send(endpoint, "POST", "/predict", int32_request(),
                 headers={"Content-Type": "application/json"})
    assert reply.status == 200, reply.text
    assert reply.headers["content-type"] == "application/json"
    document = reply.json()
    assert document["model_name"] == INT32_MODEL
    assert [o["data"] for o in document["outputs"]] == [list(range(16))] * 2


def test_binary_request_and_response_framed_by_content_type(vertex):
    endpoint, _ = vertex
    data = np.arange(16, dtype=np.int32).reshape(1, 16)
    inputs = [httpclient.InferInput(name, [1, 16], "INT32") for name in ("INPUT0", "INPUT1")]
    inputs[0].set_data_from_numpy(data, binary_data=True)
    inputs[1].set_data_from_numpy(data, binary_data=False)
    outputs = [httpclient.InferRequestedOutput("OUTPUT0", binary_data=True),
               httpclient.InferRequestedOutput("OUTPUT1", binary_data=False)]
    body, header_length = httpclient.InferenceServerClient.generate_request_body(
        inputs, outputs=outputs)
    reply = send(endpoint, "POST", "/predict", body=body,
                 headers={"Content-Type": f"{BINARY}{header_length}"})
    assert reply.status == 200, reply.text
    # A binary answer is labelled as the KServe endpoint labels it.
    assert reply.headers["content-type"] == "application/octet-stream"
    result = httpclient.InferenceServerClient.parse_response_body(
        reply.body, header_length=int(reply.headers["inference-header-content-length"]))
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), data)


@pytest.mark.parametrize(("content_type", "error"), [
    (f"additional-string/{BINARY}10", "expect MIME type for binary data starts with "
     f"'{BINARY}', got: additional-string/{BINARY}10"),
    (f"{BINARY}-123", "inference header size should be in range (0, {size}), got: -123"),
    (f"{BINARY}12345", "inference header size should be in range (0, {size}), got: 12345"),
])
def test_malformed_binary_content_type_is_refused(vertex, content_type, error):
    endpoint, _ = vertex
    body = json.dumps(int32_request()).encode()
    reply = send(endpoint, "POST", "/predict", body=body, headers={"Content-Type": content_type})
    assert reply.status == 400
    assert reply.error == error.format(size=len(body))


def test_inference_header_content_length_means_nothing_here(vertex):
    """The KServe header does not frame Vertex AI bodies: the whole body is the JSON."""
    endpoint, _ = vertex
    body = json.dumps(int32_request()).encode()
    reply = send(endpoint, "POST", "/predict", body=body,
                 headers={"Inference-Header-Content-Length": "3"})
    assert reply.status == 200, reply.text


@pytest.mark.parametrize(("target", "expect"), [
    ("v2", "extensions"),
    ("v2/health/live", ""),
    ("v2/health/ready", ""),
    (f"v2/models/{INT32_MODEL}", '"inputs"'),
    (f"v2/models/{INT32_MODEL}/ready", ""),
    (f"v2/models/{INT32_MODEL}/config", "version_policy"),
    (f"v2/models/{INT32_MODEL}/versions/1/stats", "model_stats"),
    ("v2/models/stats", "other_int32"),
    ("v2/systemsharedmemory/status", "[]"),
    ("v2/repository/index", '"state":"READY"'),
    ("metrics", "nv_inference_request_success"),
])
def test_redirect_serves_the_named_route_as_a_read(vertex, target, expect):
    endpoint, _ = vertex
    reply = send(endpoint, "POST", "/predict", body=b"", headers={REDIRECT: target})
    assert reply.status == 200, reply.text
    assert expect in reply.text


def test_redirect_to_infer_runs_that_model(vertex):
    endpoint, _ = vertex
    reply = send(endpoint, "POST", "/predict", int32_request([7] * 16),
                 headers={REDIRECT: "v2/models/other_int32/infer"})
    assert reply.status == 200, reply.text
    assert reply.json()["model_name"] == "other_int32"


def test_redirect_answers_as_the_route_does(vertex):
    endpoint, _ = vertex
    unknown = send(endpoint, "POST", "/predict", body=b"",
                   headers={REDIRECT: "v2/models/missing/ready"})
    assert unknown.status == 400
    control = send(endpoint, "POST", "/predict", body=b"",
                   headers={REDIRECT: f"v2/repository/models/{INT32_MODEL}/unload"})
    assert control.status == 503
    assert "explicit model load / unload is not allowed" in control.error


@pytest.mark.parametrize(("method", "path", "headers", "status"), [
    ("GET", "/predict", {REDIRECT: "v2"}, 405),
    ("POST", "/predict", {REDIRECT: "v2/logging"}, 400),
    ("POST", "/predict", {REDIRECT: f"v2/models/{INT32_MODEL}/generate"}, 400),
    ("GET", "/v2/health/ready", {}, 400),
    ("POST", "/elsewhere", {}, 400),
])
def test_other_requests_are_refused(vertex, method, path, headers, status):
    endpoint, server = vertex
    reply = send(endpoint, method, path, body=b"", headers=headers)
    assert reply.status == status
    assert send(endpoint, "GET", "/health").status == 200  # still serving


def _refused(tmp_path, *args: str, env: dict[str, str]) -> str:
    """Start a server expected to stop at its Vertex AI endpoint; its output."""
    repo = int32_repository(tmp_path / "repo", INT32_MODEL, "other_int32")
    server = ServerProcess([repo], "--allow-vertex-ai=true", f"--vertex-ai-port={cloud_port()}",
                           *args, env=env)
    server.start(wait_ready=False)
    assert server.wait_exit(120) == 1
    return server.log()


@pytest.mark.parametrize(("args", "env", "message"), [
    ((), {"AIP_HEALTH_ROUTE": "/health"},
     "API_PREDICT_ROUTE is not defined for Vertex AI endpoint"),
    ((), {"AIP_PREDICT_ROUTE": "/predict"},
     "AIP_HEALTH_ROUTE is not defined for Vertex AI endpoint"),
    ((), ROUTES, "Expect the model repository contains only a single model if default model "
     "is not specified"),
    (("--vertex-ai-default-model=absent",), ROUTES, "Expect the default model 'absent' is loaded"),
])
def test_start_up_refusals(tmp_path, args, env, message):
    log = _refused(tmp_path, *args, env=env)
    assert f"failed to start Vertex AI service: Invalid argument - {message}" in log


def test_aip_prediction_mode_serves_only_vertex_ai(tmp_path):
    """AIP_MODE=PREDICTION: Vertex AI on AIP_HTTP_PORT, the repository from AIP_STORAGE_URI,
    HTTP and gRPC off unless asked for; the only model is the default."""
    repo = int32_repository(tmp_path / "repo")
    endpoint = Endpoint(cloud_port())
    env = {**ROUTES, "AIP_MODE": "PREDICTION", "AIP_HTTP_PORT": str(endpoint.port),
           "AIP_STORAGE_URI": str(repo)}
    server = ServerProcess([], "--allow-grpc=true", env=env)
    server.start(wait_ready=False)
    try:
        wait_answering(endpoint, "/health", server)
        reply = send(endpoint, "POST", "/predict", int32_request())
        assert reply.status == 200 and reply.json()["model_name"] == INT32_MODEL
        messages = server.log_messages()
        assert f"Started Vertex AI HTTPService at 0.0.0.0:{endpoint.port}" in messages
        assert any(m.startswith("Started GRPCInferenceService at") for m in messages)
        assert not any(m.startswith("Started HTTPService at") for m in messages)
    finally:
        server.stop()


def test_redirects_keep_the_http_endpoints_restrictions(tmp_path):
    """--http-restricted-api guards the KServe routes a redirect reaches as it guards them on
    the HTTP port (Triton 2.51's Vertex AI endpoint applies none: the redirect bypassed it);
    the predict and health routes Vertex AI itself calls stay open."""
    repo = int32_repository(tmp_path)
    endpoint = Endpoint(cloud_port())
    server = ServerProcess(
        [repo], "--model-control-mode=explicit", f"--load-model={INT32_MODEL}",
        "--allow-vertex-ai=true", f"--vertex-ai-port={endpoint.port}",
        "--http-restricted-api=model-repository,model-config:admin-key=secret", env=ROUTES)
    with server:
        wait_answering(endpoint, "/health", server)
        refused = send(endpoint, "POST", "/predict", {},
                       headers={REDIRECT: f"v2/repository/models/{INT32_MODEL}/unload"})
        assert (refused.status, refused.error) == (
            403, "This API is restricted, expecting header 'admin-key'")
        refused = send(endpoint, "POST", "/predict", body=b"",
                       headers={REDIRECT: f"v2/models/{INT32_MODEL}/config"})
        assert refused.status == 403
        # The model is still there; the key opens the same routes.
        assert send(endpoint, "POST", "/predict", int32_request(),
                    headers={"Content-Type": "application/json"}).status == 200
        allowed = send(endpoint, "POST", "/predict", {},
                       headers={REDIRECT: "v2/repository/index", "admin-key": "secret"})
        assert allowed.status == 200 and allowed.json()[0]["state"] == "READY"
        # Unrestricted groups redirect as before.
        assert send(endpoint, "POST", "/predict", body=b"",
                    headers={REDIRECT: f"v2/models/{INT32_MODEL}/ready"}).status == 200
