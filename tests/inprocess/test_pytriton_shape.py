"""PyTriton 0.7's shape: scripts written like PyTriton's examples (tests/support/
pytriton_examples, only `pytriton.` -> `tritium.pytriton.`) run as processes and answer the
real clients and PyTriton's (ModelClient, DecoupledModelClient); TritonConfig's fields,
TritonSecurityConfig and the decorators that read the bound model's configuration."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from support import ROOT
from support.server_process import free_ports
from tritium.pytriton.client import (
    DecoupledModelClient,
    ModelClient,
    PyTritonClientInferenceServerError,
    PyTritonClientValueError,
)
from tritium.pytriton.decorators import (
    batch,
    fill_optionals,
    group_by_keys,
    pad_batch,
    triton_context,
)
from tritium.pytriton.exceptions import PyTritonValidationError
from tritium.pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
from tritium.pytriton.triton import Triton, TritonConfig, TritonSecurityConfig

EXAMPLES = ROOT / "tests" / "support" / "pytriton_examples"
FREE = TritonConfig(http_port=0, grpc_port=0, metrics_port=0)


@contextmanager
def example(script: str, **env: str) -> Iterator[tuple[int, int]]:
    """Run an example script with its ports from PYTRITON_TRITON_CONFIG_*; (http, grpc)."""
    http, grpc, metrics = free_ports(3)
    environment = {**os.environ, "PYTHONPATH": str(ROOT / "src"),
                   "PYTRITON_TRITON_CONFIG_HTTP_PORT": str(http),
                   "PYTRITON_TRITON_CONFIG_GRPC_PORT": str(grpc),
                   "PYTRITON_TRITON_CONFIG_METRICS_PORT": str(metrics), **env}
    process = subprocess.Popen([sys.executable, str(EXAMPLES / script)], env=environment,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        yield http, grpc
    finally:
        process.send_signal(signal.SIGINT)
        output = process.communicate(timeout=60)[0].decode()
        assert process.returncode == 0, output


def test_add_sub_example_names_unnamed_tensors_and_maps_a_returned_tuple():
    with example("add_sub.py") as (http, grpc):
        a, b = np.array([[1, 2]], np.float32), np.array([[10, 20]], np.float32)
        with ModelClient(f"localhost:{http}", "AddSub", init_timeout_s=120) as client:
            result = client.infer_batch(a, b)
        assert result["add"].tolist() == [[11, 22]]
        assert result["OUTPUT_2"].tolist() == [[-9, -18]]
        client = grpcclient.InferenceServerClient(f"localhost:{grpc}")
        metadata = client.get_model_metadata("AddSub", as_json=True)
        assert [t["name"] for t in metadata["inputs"]] == ["INPUT_1", "INPUT_2"]
        assert [t["name"] for t in metadata["outputs"]] == ["add", "OUTPUT_2"]


def test_optional_inputs_example_fills_defaults():
    with example("with_optional.py") as (http, _):
        a, b = np.array([[1.0]], np.float32), np.array([[10.0]], np.float32)
        with ModelClient(f"localhost:{http}", "AddSub", init_timeout_s=120) as client:
            assert client.infer_batch(a=a, b=b)["add"].tolist() == [[13.0]]  # t = 2, w = 1
            w = np.array([[3.0]], np.float32)
            result = client.infer_batch(a=a, b=b, t=np.zeros((1, 1), np.float32), w=w)
            assert result["add"].tolist() == [[13.0]] and result["sub"].tolist() == [[-7.0]]


def test_remote_triton_serves_a_function_through_a_running_server():
    token = "sesame"
    with example("starting_server.py", TRITON_ACCESS_TOKEN=token) as (http, grpc):
        with ModelClient(f"localhost:{http}", "Identity", init_timeout_s=120) as client:
            x = np.array([[4.0]], np.float32)
            assert client.infer_batch(x=x)["OUTPUT_1"].tolist() == [[4.0]]
        binder = subprocess.Popen(
            [sys.executable, str(EXAMPLES / "remote_mul.py")],
            env={**os.environ, "PYTHONPATH": str(ROOT / "src"),
                 "REMOTE_URL": f"localhost:{http}", "TRITON_ACCESS_TOKEN": token},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            a, b = np.array([[2, 3]], np.float32), np.array([[5, 7]], np.float32)
            with ModelClient(f"grpc://localhost:{grpc}", "Mul", init_timeout_s=120) as client:
                assert client.infer_batch(a, b)["mul"].tolist() == [[10, 21]]
        finally:
            binder.send_signal(signal.SIGINT)
            output = binder.communicate(timeout=60)[0].decode()
        assert binder.returncode == 0, output
        client = grpcclient.InferenceServerClient(f"localhost:{grpc}")
        assert not client.is_model_ready("Mul")  # unloaded when the binder stopped

        refused = subprocess.run(
            [sys.executable, str(EXAMPLES / "remote_mul.py")],
            env={**os.environ, "PYTHONPATH": str(ROOT / "src"),
                 "REMOTE_URL": f"localhost:{http}", "TRITON_ACCESS_TOKEN": "wrong"},
            capture_output=True, timeout=120)
        assert refused.returncode != 0
        assert b"could not load model Mul" in refused.stderr


def test_config_fields_environment_and_validation(monkeypatch):
    monkeypatch.setenv("PYTRITON_TRITON_CONFIG_GRPC_PORT", "45436")
    monkeypatch.setenv("PYTRITON_TRITON_CONFIG_CACHE_CONFIG_0", "local,size=1024")
    config = TritonConfig.from_env()
    assert config.grpc_port == 45436 and config.cache_config == ["local,size=1024"]
    assert TritonConfig.from_dict({"allow_vertex_ai": "false", "log_verbose": "2"}) == \
        TritonConfig(allow_vertex_ai=False, log_verbose=2)
    for name in ("http_header_forward_pattern", "allow_vertex_ai", "grpc_keepalive_time",
                 "sagemaker_port", "buffer_manager_thread_count", "metrics_config"):
        assert name in config.to_dict()
    with pytest.raises(PyTritonValidationError, match="has to be allowed"):
        TritonConfig(allow_http=False, allow_grpc=False)
    with pytest.raises(PyTritonValidationError, match="compression"):
        Triton(config=TritonConfig(grpc_infer_response_compression_level="huge"))
    with pytest.raises(PyTritonValidationError, match="Invalid endpoint names: nope"):
        TritonSecurityConfig(restricted_endpoints=["nope"])


def get(url: str, headers: dict[str, str] | None = None) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {})) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_security_headers_and_decorators_reading_the_model():
    seen: list[object] = []

    @fill_optionals(scale=np.array([2.0], np.float32))
    @group_by_keys
    @triton_context
    @batch
    @pad_batch
    def scaled(x, scale, triton_context):
        seen.append((len(x), triton_context.model_configs[scaled].max_batch_size))
        return [x[:1] * scale[:1]] if len(x) > 1 else [x * scale]

    def with_parameters(requests):
        return [{"y": r["x"] * float(r.parameters["header_factor"])} for r in requests]

    @fill_optionals(x=np.array([1], np.int64))
    def bad_default(requests):
        return [{}]

    config = TritonConfig(http_port=0, grpc_port=0, metrics_port=0,
                          http_header_forward_pattern="header_.*")
    vector = Tensor(name="x", dtype=np.float32, shape=(-1,))
    with Triton(config=config) as triton:
        triton.bind("scaled", scaled, inputs=[vector, Tensor(name="scale", dtype=np.float32,
                                                              shape=(1,), optional=True)],
                    outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
                    config=ModelConfig(max_batch_size=2, batcher=DynamicBatcher()))
        triton.bind("params", with_parameters, inputs=[vector],
                    outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))])
        triton.bind("bad", bad_default, inputs=[vector], outputs=[vector])
        url, token = triton.http_url, triton.get_access_token()
        assert token
        assert get(f"{url}/v2/models/stats") == 403
        assert get(f"{url}/v2/models/stats", {"triton-access-token": token}) == 200
        assert get(f"{url}/v2/health/ready") == 200
        with ModelClient(url, "scaled") as client:
            x = np.array([[3.0]], np.float32)
            assert client.infer_batch(x=x)["y"].tolist() == [[6.0]]
        assert seen == [(2, 2)]  # padded to max_batch_size, triton_context given
        with ModelClient(url, "params") as client:
            result = client.infer_batch(x=np.array([[2.0]], np.float32),
                                        headers={"header_factor": "4"})
            assert result["y"].tolist() == [[8.0]]
        (response,) = triton.server.model("bad").infer(
            inputs={"x": np.ones((1, 1), np.float32)}, raise_on_error=False)
        assert "different than input signature dtypes" in str(response.error)


def wait_for(url: str, deadline_s: float = 120.0) -> None:
    """Until `url` answers 200 (the script's server starting)."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            if get(url) == 200:
                return
        except urllib.error.URLError:  # not listening yet
            pass
        assert time.monotonic() < deadline, f"{url} never answered 200"
        time.sleep(0.1)


def test_vertex_ai_example_starts_the_server_once_its_model_is_bound():
    (vertex,) = free_ports(1)
    with example("vertex_ai.py", PYTRITON_TRITON_CONFIG_VERTEX_AI_PORT=str(vertex)) as (http, _):
        wait_for(f"http://localhost:{vertex}/health")
        body = {"inputs": [{"name": name, "shape": [1, 2], "datatype": "FP32",
                            "data": [[1, 2]]} for name in ("INPUT_1", "INPUT_2")]}
        request = urllib.request.Request(f"http://localhost:{vertex}/predict",
                                         data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request) as answer:
            outputs = {o["name"]: o["data"] for o in json.load(answer)["outputs"]}
        assert outputs == {"add": [2.0, 4.0], "sub": [0.0, 0.0]}
        with ModelClient(f"localhost:{http}", "AddSub", init_timeout_s=120) as client:
            ones = np.ones((1, 1), np.float32)
            assert client.infer_batch(ones, ones)["add"].tolist() == [[2.0]]


def test_streaming_example_a_decorated_method_read_by_the_decoupled_client():
    with example("streaming_bot.py") as (http, grpc):
        url = f"grpc://localhost:{grpc}"
        with DecoupledModelClient(url, "Words", init_timeout_s=120) as client:
            words = [r["word"].tolist() for r in client.infer_sample(
                text=np.array([b"to be or"], dtype=np.object_))]
            assert words == [[b"to"], [b"be"], [b"or"]]
            batches = [r["word"].tolist() for r in client.infer_batch(
                text=np.array([[b"x y"]], dtype=np.object_), repeat=np.array([[2]], np.int32))]
            assert batches == [[[b"xx"]], [[b"yy"]]]
        with pytest.raises(PyTritonClientValueError, match="only supported for grpc"):
            DecoupledModelClient(f"localhost:{http}", "Words")
        with ModelClient(url, "Words") as coupled, \
                pytest.raises(PyTritonClientInferenceServerError, match="decoupled"):
            coupled.infer_sample(text=np.array([b"a"], dtype=np.object_))
