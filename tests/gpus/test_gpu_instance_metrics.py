"""A GPU instance's inference metrics carry its GPU's `gpu_uuid`, as Triton's per-instance
metric reporters label them: successes, failures by reason, inference and execution counts,
request, queue and compute durations. The series without `gpu_uuid` keeps what no GPU instance
did (CPU instances, requests refused before any instance ran them). The server's NVML answers
from a probe of two GPUs recorded on an H200 (the fake pynvml); the python models do no CUDA
work, so no GPU is needed."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
from prometheus_client.parser import text_string_to_metric_families
from tritonclient.utils import InferenceServerException

from support.gpu import fake_gpu_env, write_probe
from support.models import write_model
from support.server_process import ServerProcess

MODEL_PY = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            if data[0] < 0:
                raise pb_utils.TritonModelException("negative input")
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", data)]))
        return responses
"""
INFERENCE_FAMILIES = ("nv_inference_request_success", "nv_inference_count",
                      "nv_inference_exec_count", "nv_inference_request_duration_us",
                      "nv_inference_queue_duration_us", "nv_inference_compute_infer_duration_us")


def config(name: str, group: str) -> str:
    return f"""
        name: "{name}"
        backend: "python"
        input [ {{ name: "IN" data_type: TYPE_FP32 dims: [ 1 ] }} ]
        output [ {{ name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] }} ]
        instance_group [ {group} ]
    """


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], list[str]]:
    base = tmp_path_factory.mktemp("gpu_instance_metrics")
    probe = write_probe(base / "probe.json", [(9, 0), (9, 0)])
    uuids = [d["uuid"] for d in json.loads(probe.read_text())["nvml_devices"]]
    repo = base / "repo"
    for name, group in [("on_gpu0", "{ kind: KIND_GPU gpus: [ 0 ] }"),
                        ("on_gpu1", "{ kind: KIND_GPU gpus: [ 1 ] }"),
                        ("on_cpu", "{ kind: KIND_CPU }")]:
        write_model(repo, name, config(name, group), files={"1/model.py": MODEL_PY})
    return repo, fake_gpu_env(probe), uuids


def infer(client: httpclient.InferenceServerClient, model: str, value: float) -> None:
    tensor = httpclient.InferInput("IN", [1], "FP32")
    tensor.set_data_from_numpy(np.array([value], np.float32))
    client.infer(model, [tensor])


def samples(server: ServerProcess) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """(family, sorted labels) -> value of every inference series on /metrics."""
    with urllib.request.urlopen(server.metrics_url, timeout=10) as answer:
        text = answer.read().decode()
    found = {}
    for family in text_string_to_metric_families(text):
        if family.name.startswith("nv_inference_"):  # the family's name: the parser adds _total
            for sample in family.samples:
                found[(family.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def series(model: str, uuid: str | None = None, **extra: str) -> tuple[tuple[str, str], ...]:
    labels = {"model": model, "version": "1", **extra}
    if uuid is not None:
        labels["gpu_uuid"] = uuid
    return tuple(sorted(labels.items()))


def test_each_gpu_instance_labels_its_requests_with_its_gpu(setup) -> None:
    repo, env, uuids = setup
    with ServerProcess([repo], env=env) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        for _ in range(3):
            infer(client, "on_gpu0", 1.0)
        infer(client, "on_gpu1", 1.0)
        infer(client, "on_cpu", 1.0)
        with pytest.raises(InferenceServerException, match="negative input"):
            infer(client, "on_gpu1", -1.0)
        found = samples(server)
    # on_gpu1 ran twice: once answered, once failed in execute (an execution all the same).
    for model, uuid, count, executions in [("on_gpu0", uuids[0], 3, 3),
                                           ("on_gpu1", uuids[1], 1, 2)]:
        for family, expected in [("nv_inference_request_success", count),
                                 ("nv_inference_count", count),
                                 ("nv_inference_exec_count", executions)]:
            assert found[(family, series(model, uuid))] == expected, (family, model)
            assert found[(family, series(model))] == 0, (family, model)
        for family in INFERENCE_FAMILIES[3:]:
            assert found[(family, series(model, uuid))] > 0, (family, model)
            assert found[(family, series(model))] == 0, (family, model)
        other = uuids[1] if uuid == uuids[0] else uuids[0]
        assert ("nv_inference_count", series(model, other)) not in found
    # The failure is the GPU instance's (reason BACKEND); a CPU instance's series has no label.
    failure = "nv_inference_request_failure"
    assert found[(failure, series("on_gpu1", uuids[1], reason="BACKEND"))] == 1
    assert found[(failure, series("on_gpu1", reason="BACKEND"))] == 0
    assert found[("nv_inference_count", series("on_cpu"))] == 1
    assert not [key for key in found if key[1] and dict(key[1]).get("model") == "on_cpu"
                and "gpu_uuid" in dict(key[1])]


def test_without_gpu_metrics_no_series_has_a_gpu_uuid(setup) -> None:
    """Triton labels a GPU instance's metrics only with a GPU whose metrics it collects."""
    repo, env, _ = setup
    with ServerProcess([repo], "--allow-gpu-metrics=false", env=env) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        infer(client, "on_gpu0", 1.0)
        found = samples(server)
    assert found[("nv_inference_count", series("on_gpu0"))] == 1
    assert not [key for key in found if "gpu_uuid" in dict(key[1])]
