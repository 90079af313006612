"""Triton's SageMaker endpoint: /ping, /invocations with SageMaker's Content-Type framing, the
multi-model endpoint's load/list/describe/invoke/unload, and the port checks, with Triton 2.51's
answers (the requests of its qa/L0_sagemaker, which passes against this endpoint)."""

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
from support.models import identity_config, write_model
from support.server_process import ServerProcess
from tritium.errors import TritonError
from tritium.frontend.sagemaker.multi_model import failure_status

BINARY = "application/vnd.sagemaker-triton.binary+json;json-header-size="


@pytest.fixture(scope="module")
def sagemaker(tmp_path_factory):
    """SageMaker on its own port, one model loaded (explicit mode, as the serve script runs)."""
    repo = int32_repository(tmp_path_factory.mktemp("sagemaker"))
    endpoint = Endpoint(cloud_port())
    server = ServerProcess(
        [repo], "--allow-sagemaker=true", f"--sagemaker-port={endpoint.port}",
        "--model-control-mode=explicit", f"--load-model={INT32_MODEL}", "--log-verbose=true",
        env={"SAGEMAKER_TRITON_DEFAULT_MODEL_NAME": INT32_MODEL})
    with server:
        wait_answering(endpoint, "/ping", server)
        yield endpoint, server


def test_ping_answers_readiness(sagemaker):
    endpoint, _ = sagemaker
    assert send(endpoint, "GET", "/ping").status == 200
    assert send(endpoint, "POST", "/ping", body=b"").status == 405


def test_invocations_infer_the_default_model(sagemaker):
    endpoint, _ = sagemaker
    reply = send(endpoint, "POST", "/invocations", int32_request(),
                 headers={"Content-Type": "application/json"})
    assert reply.status == 200, reply.text
    assert reply.headers["content-type"] == "application/json"
    assert reply.json() == {
        "model_name": INT32_MODEL, "model_version": "1",
        "outputs": [{"name": f"OUTPUT{i}", "datatype": "INT32", "shape": [1, 16],
                     "data": list(range(16))} for i in range(2)]}


def test_binary_bodies_are_framed_by_content_type_both_ways(sagemaker):
    endpoint, _ = sagemaker
    data = np.arange(16, dtype=np.int32).reshape(1, 16)
    inputs = [httpclient.InferInput(name, [1, 16], "INT32") for name in ("INPUT0", "INPUT1")]
    for tensor in inputs:
        tensor.set_data_from_numpy(data, binary_data=True)
    outputs = [httpclient.InferRequestedOutput(f"OUTPUT{i}", binary_data=True) for i in (0, 1)]
    body, header_length = httpclient.InferenceServerClient.generate_request_body(
        inputs, outputs=outputs)
    reply = send(endpoint, "POST", "/invocations", body=body,
                 headers={"Content-Type": f"{BINARY}{header_length}"})
    assert reply.status == 200, reply.text
    content_type = reply.headers["content-type"]
    assert content_type.startswith(BINARY)
    assert "inference-header-content-length" not in reply.headers
    result = httpclient.InferenceServerClient.parse_response_body(
        reply.body, header_length=int(content_type[len(BINARY):]))
    for name in ("OUTPUT0", "OUTPUT1"):
        np.testing.assert_array_equal(result.as_numpy(name), data)


@pytest.mark.parametrize(("content_type", "error"), [
    (f"additional-string/{BINARY}10", "expect MIME type for binary data starts with "
     f"'{BINARY}', got: additional-string/{BINARY}10"),
    (f"{BINARY}-123", "inference header size should be in range (0, {size}), got: -123"),
])
def test_malformed_binary_content_type_is_refused(sagemaker, content_type, error):
    endpoint, _ = sagemaker
    body = json.dumps(int32_request()).encode()
    reply = send(endpoint, "POST", "/invocations", body=body,
                 headers={"Content-Type": content_type})
    assert reply.status == 400
    assert reply.error == error.format(size=len(body))


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/v2/health/ready"), ("POST", "/elsewhere"), ("PUT", "/models"),
])
def test_other_requests_are_a_bare_400(sagemaker, method, path):
    endpoint, _ = sagemaker
    reply = send(endpoint, method, path, body=b"")
    assert (reply.status, reply.body) == (400, b"")


def _archive(root, digest: str, name: str):
    """An unpacked model archive, SageMaker's `<root>/<hash>/model` with one model in it."""
    model = root / digest / "model"
    write_model(model.parent, "model", identity_config(name, "TYPE_INT32", "[ 16 ]", inputs=2))
    return model


def test_multi_model_load_list_invoke_unload(sagemaker, tmp_path):
    endpoint, _ = sagemaker
    url = _archive(tmp_path, "0123abcd", "mme_one")
    load = send(endpoint, "POST", "/models", {"model_name": "mme_one", "url": str(url)})
    assert (load.status, load.body) == (200, b"")
    again = send(endpoint, "POST", "/models", {"model_name": "mme_one", "url": str(url)})
    assert again.status == 409 and "already been registered" in again.error

    entry = {"modelName": "mme_one", "modelUrl": str(url.parent)}
    assert send(endpoint, "GET", "/models").json() == {"models": [entry]}
    assert send(endpoint, "GET", "/models/mme_one").json() == entry
    assert send(endpoint, "GET", "/models/absent").status == 404

    invoked = send(endpoint, "POST", "/models/mme_one/invoke", int32_request([3] * 16))
    assert invoked.status == 200, invoked.text
    assert invoked.json()["model_name"] == "mme_one"
    assert send(endpoint, "POST", "/models/absent/invoke", int32_request()).status == 404

    assert send(endpoint, "DELETE", "/models/mme_one").status == 200
    assert send(endpoint, "DELETE", "/models/mme_one").status == 404
    assert send(endpoint, "POST", "/models/mme_one/invoke", int32_request()).status == 404
    assert send(endpoint, "GET", "/models").json() == {"models": []}
    # Its repository is unregistered with it: the same archive loads again.
    assert send(endpoint, "POST", "/models",
                {"model_name": "mme_one", "url": str(url)}).status == 200
    assert send(endpoint, "DELETE", "/models/mme_one").status == 200


def test_multi_model_ensemble_archive_serves_the_ensemble_under_the_target_name(
        sagemaker, tmp_path):
    """An archive of several models serves its ensemble, renamed to the target model."""
    endpoint, _ = sagemaker
    url = tmp_path / "ens01" / "model"
    write_model(url, "step", identity_config("step", "TYPE_INT32", "[ 16 ]", inputs=2))
    write_model(url, "pipeline", """
        name: "pipeline"
        platform: "ensemble"
        max_batch_size: 8
        input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
                { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]
        output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
                 { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]
        ensemble_scheduling { step [ { model_name: "step" model_version: -1
          input_map { key: "INPUT0" value: "INPUT0" } input_map { key: "INPUT1" value: "INPUT1" }
          output_map { key: "OUTPUT0" value: "OUTPUT0" }
          output_map { key: "OUTPUT1" value: "OUTPUT1" } } ] }
        """)
    target = {"X-Amzn-SageMaker-Target-Model": "ens01"}
    load = send(endpoint, "POST", "/models", {"model_name": "ens01", "url": str(url)},
                headers=target)
    assert load.status == 200, load.text
    invoked = send(endpoint, "POST", "/models/ens01/invoke", int32_request([5] * 16))
    assert invoked.status == 200, invoked.text
    assert invoked.json()["model_name"] == "ens01"
    assert [o["data"] for o in invoked.json()["outputs"]] == [[5] * 16] * 2
    assert send(endpoint, "DELETE", "/models/ens01", headers=target).status == 200


def test_multi_model_load_failures(sagemaker, tmp_path):
    """(Last on this server: a failed load leaves it not ready.)"""
    endpoint, _ = sagemaker
    broken = tmp_path / "bad01" / "model"
    write_model(broken.parent, "model", 'name: "model"\nbackend: "no_such_backend"\n')
    failed = send(endpoint, "POST", "/models", {"model_name": "bad01", "url": str(broken)})
    assert failed.status == 400 and "no_such_backend" in failed.error
    assert send(endpoint, "GET", "/models").json() == {"models": []}
    not_json = send(endpoint, "POST", "/models", body=b"{not json")
    assert not_json.status == 400 and "failed to parse the request JSON buffer" in not_json.error
    too_deep = send(endpoint, "POST", "/models", body=b"[" * 100_000 + b"]" * 100_000)
    assert (too_deep.status, too_deep.error) == (
        400, "failed to parse the request JSON buffer: document nesting is too deep")
    # Still serving; no longer ready (strict readiness: a model failed to load), as Triton.
    assert send(endpoint, "GET", "/models").status == 200
    assert send(endpoint, "GET", "/ping").status == 400


def test_failed_inference_status_is_507_when_out_of_memory():
    assert failure_status(TritonError.internal("CUDA out of memory. Tried to allocate")) == 507
    assert failure_status(TritonError.unavailable("model is unavailable")) == 400


def test_unset_default_model_is_reported_by_name(tmp_path):
    repo = int32_repository(tmp_path / "repo")
    endpoint = Endpoint(cloud_port())
    with ServerProcess([repo], "--allow-sagemaker=true", f"--sagemaker-port={endpoint.port}",
                       ) as server:
        wait_answering(endpoint, "/ping", server)
        reply = send(endpoint, "POST", "/invocations", body=b"dummy")
    assert reply.status != 200
    assert reply.error == ("Request for unknown model: "
                           "'unspecified_SAGEMAKER_TRITON_DEFAULT_MODEL_NAME' is not found")


@pytest.mark.parametrize(("args", "message"), [
    (("--sagemaker-safe-port-range={low}-{high}",),
     "The server cannot listen to HTTP requests at port {http}, allowed port range is "
     "[{low}, {high}]"),
    (("--allow-vertex-ai=true", "--vertex-ai-port={sagemaker}"),
     "The server cannot listen to SageMaker requests and Vertex AI requests at the same "
     "address and port 0.0.0.0:{sagemaker}"),
])
def test_port_checks_refuse_to_start(tmp_path, args, message):
    repo = int32_repository(tmp_path / "repo")
    port = cloud_port()
    server = ServerProcess([repo], "--allow-sagemaker=true", f"--sagemaker-port={port}",
                           "--http-address=0.0.0.0", "--grpc-address=0.0.0.0",
                           env={"AIP_PREDICT_ROUTE": "/p", "AIP_HEALTH_ROUTE": "/h"})
    values = {"low": port, "high": port, "http": server.http_port, "sagemaker": port}
    server.args += [a.format(**values) for a in args]
    server.start(wait_ready=False)
    assert server.wait_exit(60) == 1
    assert message.format(**values) in server.log()
