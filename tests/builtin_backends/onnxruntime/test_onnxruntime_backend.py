"""The onnxruntime backend: tiny ONNX models built here, served next to a Python model, their
outputs compared with onnxruntime called directly, over tritonclient http and grpc."""

from __future__ import annotations

import json
import shutil
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support import PYTHON_MODELS, onnx_models
from support.models import infer_arrays, write_model
from support.server_process import ServerProcess

CLIENTS = (("http", httpclient), ("grpc", grpcclient))

MLP_CONFIG = """
name: "mlp"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ 64 ] } ]
output [ { name: "logits" data_type: TYPE_FP32 dims: [ 16 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
dynamic_batching { max_queue_delay_microseconds: 2000 }
parameters { key: "intra_op_thread_count" value: { string_value: "1" } }
parameters { key: "inter_op_thread_count" value: { string_value: "1" } }
parameters { key: "execution_mode" value: { string_value: "0" } }
parameters { key: "enable_mem_arena" value: { string_value: "true" } }
"""


def direct(path: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """What onnxruntime itself computes for `feeds`."""
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("onnx_repo")
    # No config.pbtxt at all: everything comes from the graph.
    onnx_models.save(onnx_models.add_sub(), repo / "addsub_auto" / "1" / "model.onnx")
    onnx_models.save(onnx_models.add_sub(batch=2), repo / "fixed_auto" / "1" / "model.onnx")
    write_model(repo, "mlp", MLP_CONFIG)
    onnx_models.save(onnx_models.mlp(), repo / "mlp" / "1" / "model.onnx")
    # A directory model: model.onnx/ holding the graph and its external weights.
    write_model(repo, "mlp_external", 'backend: "onnxruntime"\nmax_batch_size: 8\n')
    onnx_models.save(onnx_models.mlp(), repo / "mlp_external" / "1" / "model.onnx",
                     external_data=True)
    write_model(repo, "mlp_renamed", 'platform: "onnxruntime_onnx"\n'
                'default_model_filename: "classifier.onnx"\nmax_batch_size: 8\n')
    onnx_models.save(onnx_models.mlp(), repo / "mlp_renamed" / "1" / "classifier.onnx")
    onnx_models.save(onnx_models.strings(), repo / "strings_auto" / "1" / "model.onnx")
    onnx_models.save(onnx_models.scalar(), repo / "scalar_auto" / "1" / "model.onnx")
    shutil.copytree(PYTHON_MODELS / "repo" / "add_sub", repo / "add_sub")
    return repo


@pytest.fixture(scope="module")
def server(repo: Path):
    with ServerProcess([repo]) as process:
        yield process


def config_of(server: ServerProcess, model: str) -> dict:
    with urllib.request.urlopen(f"http://{server.http_url}/v2/models/{model}/config") as r:
        return json.loads(r.read())



def test_auto_complete_from_the_graph(server: ServerProcess) -> None:
    config = config_of(server, "addsub_auto")
    assert config["platform"] == "onnxruntime_onnx" and config["backend"] == "onnxruntime"
    # A symbolic first dimension: batchable, max_batch_size from default-max-batch-size (4).
    assert config["max_batch_size"] == 4
    assert "dynamic_batching" in config
    assert [(i["name"], i["data_type"], i["dims"]) for i in config["input"]] == [
        ("INPUT0", "TYPE_FP32", [4]), ("INPUT1", "TYPE_FP32", [4])]
    assert [o["name"] for o in config["output"]] == ["OUTPUT0", "OUTPUT1"]
    # Triton's default for onnxruntime on CPU: two instances.
    assert [(g["kind"], g["count"]) for g in config["instance_group"]] == [("KIND_CPU", 2)]

    over_grpc = grpcclient.InferenceServerClient(server.grpc_url).get_model_config(
        "addsub_auto", as_json=True)["config"]
    assert over_grpc["max_batch_size"] == 4 and len(over_grpc["input"]) == 2

    fixed = config_of(server, "fixed_auto")
    assert fixed["max_batch_size"] == 0 and "dynamic_batching" not in fixed
    assert fixed["input"][0]["dims"] == [2, 4]


@pytest.mark.parametrize("protocol,module", CLIENTS)
def test_outputs_match_onnxruntime(server: ServerProcess, repo: Path, protocol, module) -> None:
    url = server.http_url if protocol == "http" else server.grpc_url
    rng = np.random.default_rng(1)
    for batch in (1, 8):
        x = rng.standard_normal((batch, 64)).astype(np.float32)
        expected = direct(repo / "mlp" / "1" / "model.onnx", {"x": x})[0]
        for model in ("mlp", "mlp_external", "mlp_renamed"):
            got = infer_arrays(module, url, model, {"x": x}).as_numpy("logits")
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)

    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((3, 4)).astype(np.float32)
    result = infer_arrays(module, url, "addsub_auto", {"INPUT0": a, "INPUT1": b})
    np.testing.assert_allclose(result.as_numpy("OUTPUT0"), a + b)
    np.testing.assert_allclose(result.as_numpy("OUTPUT1"), a - b)
    # The Python model in the same repository answers alike.
    py = infer_arrays(module, url, "add_sub",
                      {"INPUT0": a[:1].reshape(4), "INPUT1": b[:1].reshape(4)})
    np.testing.assert_allclose(py.as_numpy("OUTPUT0"), (a + b)[0])


def test_only_requested_outputs_are_returned(server: ServerProcess) -> None:
    a = np.ones((2, 4), np.float32)
    for protocol, module in CLIENTS:
        url = server.http_url if protocol == "http" else server.grpc_url
        result = infer_arrays(module, url, "addsub_auto", {"INPUT0": a, "INPUT1": a},
                              outputs=["OUTPUT1"])
        assert result.as_numpy("OUTPUT0") is None
        np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), np.zeros((2, 4), np.float32))


def test_strings_round_trip(server: ServerProcess) -> None:
    text = np.array([[b"hello", "wörld".encode()], [b"", b"onnx"]], dtype=np.object_)
    for protocol, module in CLIENTS:
        url = server.http_url if protocol == "http" else server.grpc_url
        out = infer_arrays(module, url, "strings_auto", {"TEXT_IN": text}).as_numpy("TEXT_OUT")
        assert out.tolist() == text.tolist()


def test_scalars_travel_as_one_element(server: ServerProcess) -> None:
    config = config_of(server, "scalar_auto")
    assert config["max_batch_size"] == 0 and config["input"][0]["dims"] == [1]
    value = np.array([3.0], np.float32)
    result = infer_arrays(grpcclient, server.grpc_url, "scalar_auto", {"VALUE": value})
    np.testing.assert_array_equal(result.as_numpy("HALF"), np.array([1.5], np.float32))


def test_concurrent_requests_of_mixed_batch_sizes(server: ServerProcess, repo: Path) -> None:
    rng = np.random.default_rng(2)
    batches = [rng.standard_normal((1 + i % 8, 64)).astype(np.float32) for i in range(24)]
    expected = [direct(repo / "mlp" / "1" / "model.onnx", {"x": x})[0] for x in batches]

    def call(x: np.ndarray) -> np.ndarray:
        return infer_arrays(grpcclient, server.grpc_url, "mlp", {"x": x}).as_numpy("logits")

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(call, batches))
    for got, want in zip(results, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_wrong_shape_is_refused_and_server_keeps_serving(server: ServerProcess) -> None:
    bad = np.ones((1, 5), np.float32)
    with pytest.raises(InferenceServerException) as info:
        infer_arrays(httpclient, server.http_url, "addsub_auto", {"INPUT0": bad, "INPUT1": bad})
    assert info.value.status() == "400"
    # Both are wrong: Triton 2.51 names the last one given.
    assert "input 'INPUT1'" in info.value.message() and "[-1,4]" in info.value.message()
    good = np.ones((1, 4), np.float32)
    result = infer_arrays(httpclient, server.http_url, "addsub_auto",
                          {"INPUT0": good, "INPUT1": good})
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), good * 2)


BAD_MODELS = {
    # Each config contradicts its model (add_sub: INPUT0/INPUT1 [-1,4] FP32) in one way.
    "bad_dims": ("max_batch_size: 4\ninput [ { name: \"INPUT0\" data_type: TYPE_FP32 dims: [ 5 ] },"
                 " { name: \"INPUT1\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n",
                 "model 'bad_dims', tensor 'INPUT0': the model expects 2 dimensions (shape "
                 "[-1,4]) but the model configuration specifies 2 dimensions (an initial batch "
                 "dimension because max_batch_size > 0 followed by the explicit tensor shape, "
                 "making complete shape [-1,5])"),
    "bad_type": ("max_batch_size: 4\n"
                 "input [ { name: \"INPUT0\" data_type: TYPE_INT32 dims: [ 4 ] },"
                 " { name: \"INPUT1\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n",
                 "unable to load model 'bad_type', configuration expects datatype TYPE_INT32 for "
                 "input 'INPUT0', model provides TYPE_FP32"),
    "bad_name": ("max_batch_size: 4\ninput [ { name: \"INPUT0\" data_type: TYPE_FP32 dims: [ 4 ] },"
                 " { name: \"WRONG\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n",
                 "unexpected inference input 'WRONG', allowed inputs are: INPUT0, INPUT1"),
    "bad_count": ("max_batch_size: 4\n"
                  "input [ { name: \"INPUT0\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n"
                  "output [ { name: \"OUTPUT0\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n",
                  "unable to load model 'bad_count', configuration expects 1 inputs, model "
                  "provides 2"),
}


def test_contradicting_configs_and_missing_files_are_refused(tmp_path: Path) -> None:
    for name, (config, _) in BAD_MODELS.items():
        write_model(tmp_path, name, f'platform: "onnxruntime_onnx"\n{config}')
        onnx_models.save(onnx_models.add_sub(), tmp_path / name / "1" / "model.onnx")
    # A batch size the model cannot take: its first dimension is fixed.
    write_model(tmp_path, "not_batchable", 'platform: "onnxruntime_onnx"\nmax_batch_size: 8\n')
    onnx_models.save(onnx_models.add_sub(batch=2), tmp_path / "not_batchable" / "1" / "model.onnx")
    write_model(tmp_path, "no_file", 'platform: "onnxruntime_onnx"\nmax_batch_size: 0\n'
                'input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
                'output [ { name: "y" data_type: TYPE_FP32 dims: [ 4 ] } ]\n')
    onnx_models.save(onnx_models.add_sub(), tmp_path / "good" / "1" / "model.onnx")
    write_model(tmp_path, "corrupt", 'platform: "onnxruntime_onnx"\n',
                files={"1/model.onnx": "this is not an ONNX protobuf"})

    with ServerProcess([tmp_path], "--exit-on-error=false", "--strict-readiness=false") as server:
        log = server.log()
        for name, (_, message) in BAD_MODELS.items():
            assert message in log, name
        assert ("autofill failed for model 'not_batchable': model does not support batching "
                "while non-zero max_batch_size is specified") in log
        missing = tmp_path / "no_file" / "1" / "model.onnx"
        assert f"unable to find '{missing}' for model instance 'no_file'" in log
        assert "| corrupt " in log and "onnx runtime error 7: " in log
        client = httpclient.InferenceServerClient(server.http_url)
        assert not client.is_model_ready("bad_dims")
        assert client.is_model_ready("good")
        with pytest.raises(InferenceServerException):
            infer_arrays(httpclient, server.http_url, "bad_type",
                         {"INPUT0": np.ones((1, 4), np.float32)})


def test_invalid_parameters_are_refused(tmp_path: Path) -> None:
    write_model(tmp_path, "bad_mode", 'platform: "onnxruntime_onnx"\n'
                'parameters { key: "execution_mode" value: { string_value: "2" } }\n')
    onnx_models.save(onnx_models.add_sub(), tmp_path / "bad_mode" / "1" / "model.onnx")
    with ServerProcess([tmp_path], "--exit-on-error=false", "--strict-readiness=false") as server:
        assert ("Expected values for  execution_mode are 0 or 1 but got 2 ." in server.log())


def test_default_max_batch_size_comes_from_backend_config(tmp_path: Path) -> None:
    onnx_models.save(onnx_models.add_sub(), tmp_path / "addsub" / "1" / "model.onnx")
    flag = "--backend-config=onnxruntime,default-max-batch-size=16"
    with ServerProcess([tmp_path], flag) as server:
        assert config_of(server, "addsub")["max_batch_size"] == 16


def test_logs_the_lines_of_tritons_onnxruntime_backend(server: ServerProcess) -> None:
    messages = server.log_messages()
    for line in ("TRITONBACKEND_Initialize: onnxruntime", "Triton TRITONBACKEND API version: 1.19",
                 "'onnxruntime' TRITONBACKEND API version: 1.19",
                 "TRITONBACKEND_ModelInitialize: mlp (version 1)"):
        assert messages.count(line) == 1, line
    assert any(m.startswith("backend configuration:\n{") for m in messages)
    instances = [m for m in messages if m.startswith("TRITONBACKEND_ModelInstanceInitialize: mlp_")]
    assert instances and all(m.endswith(" (CPU device 0)") for m in instances)
