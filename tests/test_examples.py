"""The bundled example repository, served as `make serve` serves it, and its metrics."""

from __future__ import annotations

import re
import urllib.request

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support import ROOT
from support.server_process import ServerProcess


@pytest.fixture(scope="module")
def example_server():
    with ServerProcess([ROOT / "examples" / "model_repository"],
                       f"--backend-directory={ROOT / 'examples' / 'backends'}") as server:
        yield server


def metric(text: str, name: str, model: str) -> float:
    match = re.search(rf'^{name}{{model="{model}",version="1"}} (\S+)$', text, re.MULTILINE)
    assert match, f"{name} for {model} not in metrics"
    return float(match.group(1))


def test_simple_addsub_over_http_and_grpc(example_server: ServerProcess) -> None:
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.ones((1, 16), dtype=np.int32)
    for module, url in ((httpclient, example_server.http_url),
                        (grpcclient, example_server.grpc_url)):
        client = module.InferenceServerClient(url)
        inputs = [module.InferInput("INPUT0", [1, 16], "INT32"),
                  module.InferInput("INPUT1", [1, 16], "INT32")]
        inputs[0].set_data_from_numpy(a)
        inputs[1].set_data_from_numpy(b)
        result = client.infer("simple", inputs)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)


def test_bytes_identity_over_grpc(example_server: ServerProcess) -> None:
    client = grpcclient.InferenceServerClient(example_server.grpc_url)
    data = np.array([[b"hello", b"", "wörld".encode()]], dtype=np.object_)
    inp = grpcclient.InferInput("INPUT0", [1, 3], "BYTES")
    inp.set_data_from_numpy(data)
    out = client.infer("identity_bytes", [inp]).as_numpy("OUTPUT0")
    assert out.tolist() == data.tolist()


def test_metrics_count_successes_failures_and_batches(example_server: ServerProcess) -> None:
    before = urllib.request.urlopen(example_server.metrics_url).read().decode()
    client = httpclient.InferenceServerClient(example_server.http_url)
    data = np.ones((3, 4), dtype=np.float32)
    inp = httpclient.InferInput("INPUT0", [3, 4], "FP32")
    inp.set_data_from_numpy(data)
    for _ in range(2):
        client.infer("identity_fp32", [inp])
    bad = httpclient.InferInput("INPUT0", [3, 4], "INT32")
    bad.set_data_from_numpy(data.astype(np.int32))
    with pytest.raises(InferenceServerException) as info:
        client.infer("identity_fp32", [bad])
    assert (info.value.status(), info.value.message()) == ("400", (
        "[request id: <id_unknown>] inference input 'INPUT0' data-type is 'INT32', but model "
        "'identity_fp32' expects 'FP32'"))
    example_server.wait_metric("nv_inference_exec_count", "identity_fp32",
                               metric(before, "nv_inference_exec_count", "identity_fp32") + 2)
    after = urllib.request.urlopen(example_server.metrics_url).read().decode()

    def delta(name: str) -> float:
        return metric(after, name, "identity_fp32") - metric(before, name, "identity_fp32")

    assert delta("nv_inference_request_success") == 2
    assert delta("nv_inference_count") == 6  # two requests of batch 3
    assert delta("nv_inference_exec_count") == 2
    assert delta("nv_inference_request_duration_us") > 0
    assert metric(after, "nv_inference_queue_duration_us", "identity_fp32") >= 0
    assert metric(after, "nv_inference_compute_infer_duration_us", "identity_fp32") >= 0
    assert "# HELP nv_inference_compute_output_duration_us" in after
