"""A compiled backend may call the server's API from TRITONBACKEND_Initialize, before any of its
models exists: Triton's identity backend makes its metric family there (L0_backend_identity).

init_metrics.cc (tests/support/native_backends) makes a counter family and sets a gauge of its
own in Initialize; its models count their requests with counters of that family.
"""

from __future__ import annotations

import urllib.request

import numpy as np
import pytest
import tritonclient.http as httpclient

from support.native_fixtures import compile_backends, write_model
from support.server_process import ServerProcess

IO = ('input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]\n'
      'output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]\n')


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("init_metrics")
    backends = compile_backends(base / "backends", {"init_metrics": "init_metrics"})
    repo = base / "models"
    for model in ("first", "second"):
        write_model(repo, model, 'backend: "init_metrics"\n' + IO)
    with ServerProcess([repo], f"--backend-directory={backends}") as process:
        yield process


def _infer(client: httpclient.InferenceServerClient, model: str, value: int) -> int:
    tensor = httpclient.InferInput("INPUT0", [1], "INT32")
    tensor.set_data_from_numpy(np.array([value], np.int32))
    return int(client.infer(model, [tensor]).as_numpy("OUTPUT0")[0])


def test_models_of_a_backend_that_makes_metrics_in_initialize_load(server):
    client = httpclient.InferenceServerClient(server.http_url)
    assert client.is_model_ready("first") and client.is_model_ready("second")
    assert _infer(client, "first", 5) == 5


def test_a_metric_made_and_set_in_initialize_is_exported(server):
    with urllib.request.urlopen(server.metrics_url, timeout=10) as response:
        lines = response.read().decode().splitlines()
    assert 'native_init_backend_initialized{backend="init_metrics"} 1' in lines


def test_models_count_with_the_family_made_in_initialize(server):
    client = httpclient.InferenceServerClient(server.http_url)
    before = server.metric("native_init_requests_total", "second")
    for value in (1, 2, 3):
        assert _infer(client, "second", value) == value
    server.wait_metric("native_init_requests_total", "second", before + 3)
    assert server.metric("native_init_requests_total", "second") == before + 3
