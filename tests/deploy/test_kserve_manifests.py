"""deploy/kserve: the manifests are valid Kubernetes and KServe objects, and every container
command line is one `tritium serve` accepts (parsed by Tritium's own CLI parser).

Kubernetes objects (Deployment, Service, and the containers inside KServe's objects) are read
with the `kubernetes` package's models (ApiClient deserialisation, which checks types and
required fields) and written back: a field the models do not know (a typo) is dropped, so the
round trip must give the manifest back unchanged. KServe's own fields are checked against a
JSON schema of the ServingRuntime and InferenceService CRD fields used here.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest
import yaml
from kubernetes.client import ApiClient

from support import ROOT
from tritium.cli import build_parser, check_serve_args

DEPLOY = ROOT / "deploy" / "kserve"
API = ApiClient()

_QUANTITY = {"type": "object", "additionalProperties": {"type": "string"}}
_RESOURCES = {"type": "object", "additionalProperties": False,
              "properties": {"requests": _QUANTITY, "limits": _QUANTITY}}
_DNS_LABEL = {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"}
_METADATA = {"type": "object", "required": ["name"],
             "properties": {"name": _DNS_LABEL,
                            "namespace": {"type": "string"},
                            "labels": _QUANTITY, "annotations": _QUANTITY}}
# KServe's ServingRuntimeSpec (serving.kserve.io/v1alpha1), the fields this runtime uses.
SERVING_RUNTIME = {
    "type": "object", "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "serving.kserve.io/v1alpha1"},
        "kind": {"enum": ["ClusterServingRuntime", "ServingRuntime"]},
        "metadata": _METADATA,
        "spec": {
            "type": "object", "additionalProperties": False,
            "required": ["supportedModelFormats", "containers"],
            "properties": {
                "annotations": _QUANTITY,
                "supportedModelFormats": {"type": "array", "minItems": 1, "items": {
                    "type": "object", "additionalProperties": False, "required": ["name"],
                    "properties": {"name": {"type": "string"}, "version": {"type": "string"},
                                   "autoSelect": {"type": "boolean"},
                                   "priority": {"type": "integer", "minimum": 1}}}},
                "protocolVersions": {"type": "array", "items": {
                    "enum": ["v1", "v2", "grpc-v1", "grpc-v2"]}},
                "multiModel": {"type": "boolean"},
                "disabled": {"type": "boolean"},
                "containers": {"type": "array", "minItems": 1, "items": {"type": "object"}},
            },
        },
    },
}
# KServe's InferenceService (serving.kserve.io/v1beta1): a predictor's `model`.
INFERENCE_SERVICE = {
    "type": "object", "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "serving.kserve.io/v1beta1"},
        "kind": {"const": "InferenceService"},
        "metadata": _METADATA,
        "spec": {"type": "object", "additionalProperties": False, "required": ["predictor"],
                 "properties": {"predictor": {
                     "type": "object", "additionalProperties": False, "required": ["model"],
                     "properties": {
                         "minReplicas": {"type": "integer"}, "maxReplicas": {"type": "integer"},
                         "model": {
                             "type": "object", "required": ["modelFormat", "storageUri"],
                             "properties": {
                                 "modelFormat": {
                                     "type": "object", "additionalProperties": False,
                                     "required": ["name"],
                                     "properties": {"name": {"type": "string"},
                                                    "version": {"type": "string"}}},
                                 "runtime": {"type": "string"},
                                 "protocolVersion": {"enum": ["v1", "v2", "grpc-v2"]},
                                 "storageUri": {"type": "string", "minLength": 1},
                                 "resources": _RESOURCES,
                             }}}}}},
    },
}
# What the InferenceService's `model` adds to a Kubernetes container.
_MODEL_FIELDS = ("modelFormat", "runtime", "protocolVersion", "storageUri")


def load(name: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all((DEPLOY / name).read_text()) if doc]


def round_trip(document: dict[str, Any], model: str) -> None:
    """`document` read as the kubernetes model `model` and written back, unchanged."""
    parsed = API.deserialize(json.dumps(document), model, "application/json")
    assert API.sanitize_for_serialization(parsed) == document


def serve_args(command: list[str]) -> Any:
    """The container's command line through `tritium serve`'s own parser."""
    assert command[0] == "tritium" and command[1] == "serve", command
    args = build_parser().parse_args(command[1:])
    check_serve_args(args)
    return args


def by_kind(name: str) -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in load(name)}


def test_cluster_serving_runtime_is_kserves():
    runtime = by_kind("cluster-serving-runtime.yaml")["ClusterServingRuntime"]
    jsonschema.validate(runtime, SERVING_RUNTIME)
    formats = {f["name"] for f in runtime["spec"]["supportedModelFormats"]}
    assert formats == {"triton", "onnx", "pytorch", "python"}
    assert set(runtime["spec"]["protocolVersions"]) == {"v2", "grpc-v2"}
    (container,) = runtime["spec"]["containers"]
    round_trip(container, "V1Container")
    assert container["name"] == "kserve-container"  # the name KServe injects models into
    args = serve_args(container["command"] + container["args"])
    # KServe's model mount, HTTP port and gRPC (h2c) port; the scrape port it is told about.
    assert args.model_repository == ["/mnt/models"]
    assert args.http_port == 8080 and args.grpc_port == 8081
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"h2c": 8081}
    assert runtime["spec"]["annotations"]["prometheus.kserve.io/port"] == str(args.metrics_port)
    assert container["readinessProbe"]["httpGet"]["port"] == args.http_port


def test_inference_service_uses_the_runtime():
    service = by_kind("inference-service.yaml")["InferenceService"]
    jsonschema.validate(service, INFERENCE_SERVICE)
    model = service["spec"]["predictor"]["model"]
    container = {k: v for k, v in model.items() if k not in _MODEL_FIELDS}
    round_trip({"name": "kserve-container", **container}, "V1Container")
    runtime = by_kind("cluster-serving-runtime.yaml")["ClusterServingRuntime"]
    assert model["runtime"] == runtime["metadata"]["name"]
    supported = {(f["name"], f["version"]) for f in runtime["spec"]["supportedModelFormats"]}
    assert (model["modelFormat"]["name"], model["modelFormat"]["version"]) in supported
    assert model["protocolVersion"] in runtime["spec"]["protocolVersions"]


def test_plain_deployment_and_service():
    documents = by_kind("deployment.yaml")
    deployment, service = documents["Deployment"], documents["Service"]
    round_trip(deployment, "V1Deployment")
    round_trip(service, "V1Service")
    pod = deployment["spec"]["template"]
    labels = pod["metadata"]["labels"].items()
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels
    assert service["spec"]["selector"].items() <= labels
    (container,) = pod["spec"]["containers"]
    args = serve_args(container["command"] + container["args"])
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http": args.http_port, "grpc": args.grpc_port,
                     "metrics": args.metrics_port}
    assert {p["targetPort"] for p in service["spec"]["ports"]} == set(ports)
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert set(args.model_repository) <= mounts


def test_dockerfile_command_line_is_one_tritium_serve_accepts():
    text = (DEPLOY / "Dockerfile").read_text()
    entrypoint = json.loads(re.search(r"^ENTRYPOINT (\[.*\])$", text, re.M).group(1))
    cmd = json.loads(re.search(r"^CMD (\[.*\])$", text, re.M).group(1))
    args = serve_args(entrypoint + cmd)
    exposed = {int(p) for p in re.search(r"^EXPOSE (.*)$", text, re.M).group(1).split()}
    assert exposed == {args.http_port, args.grpc_port, args.metrics_port}
    # CPU torch only, at the version pyproject pins, installed before Tritium.
    assert re.search(r"pip install .*torch==2\.13\.0 --index-url https://download\.pytorch"
                     r"\.org/whl/cpu", text)
    assert text.index("torch==2.13.0") < text.index('".[onnxruntime,torch,ray]"')


@pytest.mark.parametrize("bad", ["--http-port=eighty", "--no-such-flag"])
def test_a_bad_command_line_is_refused(bad):
    with pytest.raises(SystemExit):
        serve_args(["tritium", "serve", "--model-repository=/m", bad])
