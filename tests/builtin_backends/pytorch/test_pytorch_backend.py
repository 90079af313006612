"""The pytorch backend: TorchScript models scripted here, served next to an ONNX and a Python
model, their outputs compared with the modules called directly, over tritonclient http and grpc;
and a server whose Python cannot import torch."""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support import PYTHON_MODELS, ROOT, onnx_models, torch_models
from support.models import infer_arrays, write_model
from support.server_process import ServerProcess

CLIENTS = (("http", httpclient), ("grpc", grpcclient))


def io(kind: str, name: str, datatype: str, dims: str) -> str:
    return f'{kind} {{ name: "{name}" data_type: {datatype} dims: {dims} }}\n'


def pytorch_config(body: str, max_batch_size: int = 8, extra: str = "") -> str:
    return f'platform: "pytorch_libtorch"\nmax_batch_size: {max_batch_size}\n{body}{extra}'


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("torch_repo")
    write_model(repo, "addsub_pt", pytorch_config(
        io("input", "INPUT__0", "TYPE_FP32", "[ 4 ]")
        + io("input", "INPUT__1", "TYPE_FP32", "[ 4 ]")
        + io("output", "OUTPUT__0", "TYPE_FP32", "[ 4 ]")
        + io("output", "OUTPUT__1", "TYPE_FP32", "[ 4 ]")))
    torch_models.save(torch_models.AddSub(), repo / "addsub_pt" / "1" / "model.pt")
    # Listed in the opposite order of forward(minuend, subtrahend): matched by name.
    write_model(repo, "difference_pt", pytorch_config(
        io("input", "subtrahend", "TYPE_INT64", "[ 3 ]")
        + io("input", "minuend", "TYPE_INT64", "[ 3 ]")
        + io("output", "DIFF", "TYPE_INT64", "[ 3 ]")))
    torch_models.save(torch_models.Difference(), repo / "difference_pt" / "1" / "model.pt")
    write_model(repo, "doubler_pt", pytorch_config(
        io("input", "y", "TYPE_FP32", "[ 2 ]") + io("input", "x", "TYPE_FP32", "[ 2 ]")
        + io("output", "out__0", "TYPE_FP32", "[ 2 ]")))
    torch_models.save(torch_models.Doubler(), repo / "doubler_pt" / "1" / "model.pt")
    write_model(repo, "mlp_pt", pytorch_config(
        io("input", "x__0", "TYPE_FP32", "[ 64 ]")
        + io("output", "logits__0", "TYPE_FP32", "[ 16 ]"),
        extra='parameters { key: "INFERENCE_MODE" value: { string_value: "false" } }\n'
              'parameters { key: "DISABLE_OPTIMIZED_EXECUTION" value: { string_value: "true" } }\n'
              'parameters { key: "ENABLE_JIT_PROFILING" value: { string_value: "false" } }\n'
              'parameters { key: "INTRA_OP_THREAD_COUNT" value: { string_value: "1" } }\n'
              'instance_group [ { count: 2 kind: KIND_CPU } ]\n'
              'dynamic_batching { max_queue_delay_microseconds: 2000 }\n'))
    torch_models.save(torch_models.mlp(), repo / "mlp_pt" / "1" / "model.pt")
    write_model(repo, "shout_pt", pytorch_config(
        io("input", "WORDS", "TYPE_STRING", "[ -1 ]")
        + io("output", "LOUD", "TYPE_STRING", "[ -1 ]"),
        max_batch_size=0))
    torch_models.save(torch_models.Shout(), repo / "shout_pt" / "1" / "model.pt")
    # Neighbours of another framework and the Python backend, in the same repository.
    onnx_models.save(onnx_models.add_sub(), repo / "addsub_onnx" / "1" / "model.onnx")
    shutil.copytree(PYTHON_MODELS / "repo" / "add_sub", repo / "add_sub")
    return repo


@pytest.fixture(scope="module")
def server(repo: Path):
    with ServerProcess([repo]) as process:
        yield process



@pytest.mark.parametrize("protocol,module", CLIENTS)
def test_outputs_match_torch(server: ServerProcess, protocol: str, module) -> None:
    url = server.http_url if protocol == "http" else server.grpc_url
    torch_models.assert_mlp_served(module, url, "mlp_pt", seed=3, tolerance=1e-5)

    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 4)).astype(np.float32)
    b = rng.standard_normal((2, 4)).astype(np.float32)
    result = infer_arrays(module, url, "addsub_pt", {"INPUT__0": a, "INPUT__1": b})
    np.testing.assert_allclose(result.as_numpy("OUTPUT__0"), a + b)
    np.testing.assert_allclose(result.as_numpy("OUTPUT__1"), a - b)
    onnx = infer_arrays(module, url, "addsub_onnx", {"INPUT0": a, "INPUT1": b})
    np.testing.assert_allclose(onnx.as_numpy("OUTPUT1"), a - b)
    py = infer_arrays(module, url, "add_sub", {"INPUT0": a[0], "INPUT1": b[0]})
    np.testing.assert_allclose(py.as_numpy("OUTPUT0"), (a + b)[0])


def test_inputs_follow_forward_argument_names_and_dicts(server: ServerProcess) -> None:
    minuend = np.array([[10, 20, 30]], dtype=np.int64)
    subtrahend = np.array([[1, 2, 3]], dtype=np.int64)
    result = infer_arrays(grpcclient, server.grpc_url, "difference_pt",
                   {"subtrahend": subtrahend, "minuend": minuend})
    np.testing.assert_array_equal(result.as_numpy("DIFF"), minuend - subtrahend)

    x = np.array([[1, 2]], dtype=np.float32)
    y = np.array([[10, 20]], dtype=np.float32)
    result = infer_arrays(httpclient, server.http_url, "doubler_pt", {"x": x, "y": y})
    np.testing.assert_array_equal(result.as_numpy("out__0"), x * 2 + y)


def test_only_requested_outputs_and_strings(server: ServerProcess, tmp_path: Path) -> None:
    a = np.ones((1, 4), np.float32)
    result = infer_arrays(httpclient, server.http_url, "addsub_pt", {"INPUT__0": a, "INPUT__1": a},
                   outputs=["OUTPUT__1"])
    assert result.as_numpy("OUTPUT__0") is None
    np.testing.assert_array_equal(result.as_numpy("OUTPUT__1"), np.zeros((1, 4), np.float32))

    words = np.array([b"hello", "wörld".encode()], dtype=np.object_)
    shout = torch.jit.load(str(torch_models.save(torch_models.Shout(), tmp_path / "shout.pt")))
    expected = [w.encode() for w in shout(["hello", "wörld"])]
    for protocol, module in CLIENTS:
        url = server.http_url if protocol == "http" else server.grpc_url
        out = infer_arrays(module, url, "shout_pt", {"WORDS": words}).as_numpy("LOUD")
        assert out.tolist() == expected


def test_concurrent_requests_of_mixed_batch_sizes(server: ServerProcess) -> None:
    rng = np.random.default_rng(4)
    batches = [rng.standard_normal((1 + i % 8, 64)).astype(np.float32) for i in range(16)]
    mlp = torch_models.mlp()
    with torch.no_grad():
        expected = [mlp(torch.from_numpy(x)).numpy() for x in batches]

    def call(x: np.ndarray) -> np.ndarray:
        result = infer_arrays(grpcclient, server.grpc_url, "mlp_pt", {"x__0": x})
        return result.as_numpy("logits__0")

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(call, batches))
    for got, want in zip(results, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_bad_configs_and_files_are_refused(tmp_path: Path) -> None:
    two_inputs = (io("input", "INPUT__0", "TYPE_FP32", "[ 4 ]")
                  + io("input", "INPUT__1", "TYPE_FP32", "[ 4 ]"))
    write_model(tmp_path, "wrong_count", pytorch_config(
        io("input", "INPUT__0", "TYPE_FP32", "[ 4 ]")
        + io("output", "OUTPUT__0", "TYPE_FP32", "[ 4 ]")))
    write_model(tmp_path, "wrong_type", pytorch_config(
        two_inputs + io("output", "OUTPUT__0", "TYPE_FP64", "[ 4 ]")))
    write_model(tmp_path, "wrong_index", pytorch_config(
        two_inputs + io("output", "OUTPUT__5", "TYPE_FP32", "[ 4 ]")))
    write_model(tmp_path, "wrong_input_index", pytorch_config(
        io("input", "INPUT__0", "TYPE_FP32", "[ 4 ]")
        + io("input", "INPUT__2", "TYPE_FP32", "[ 4 ]")
        + io("output", "OUTPUT__0", "TYPE_FP32", "[ 4 ]")))
    write_model(tmp_path, "no_file", pytorch_config(
        two_inputs + io("output", "OUTPUT__0", "TYPE_FP32", "[ 4 ]")))
    write_model(tmp_path, "not_torchscript", pytorch_config(
        two_inputs + io("output", "OUTPUT__0", "TYPE_FP32", "[ 4 ]")),
        files={"1/model.pt": "not a TorchScript archive"})
    for name in ("wrong_count", "wrong_type", "wrong_index", "wrong_input_index"):
        torch_models.save(torch_models.AddSub(), tmp_path / name / "1" / "model.pt")

    with ServerProcess([tmp_path], "--exit-on-error=false", "--strict-readiness=false") as server:
        log = server.log()
        assert ("unable to load model 'wrong_count', configuration expects 1 inputs, "
                "model provides 2") in log
        missing = tmp_path / "no_file" / "1" / "model.pt"
        assert f"unable to find '{missing}' for model instance 'no_file'" in log
        assert "failed to load 'not_torchscript' version 1: " in log
        assert ("unable to load model 'wrong_input_index', input 'INPUT__2' refers to forward() "
                "argument 2, but forward() takes 2 arguments") in log

        a = np.ones((1, 4), np.float32)
        arrays = {"INPUT__0": a, "INPUT__1": a}
        with pytest.raises(InferenceServerException) as info:
            infer_arrays(httpclient, server.http_url, "wrong_type", arrays)
        assert ("configuration expects datatype TYPE_FP64 for output 'OUTPUT__0', model "
                "provides TYPE_FP32") in info.value.message()
        with pytest.raises(InferenceServerException) as info:
            infer_arrays(grpcclient, server.grpc_url, "wrong_index", arrays)
        assert ("The output OUTPUT__5 in the model configuration refers to an output index "
                "which doesn't exist. This model has 2 outputs") in info.value.message()


def test_without_torch_pytorch_models_are_unavailable_and_the_rest_serves(
    repo: Path, tmp_path: Path
) -> None:
    # A `torch` package that fails to import exactly as a missing one does, first on the path
    # of the server's Python: the backend's `import torch` really raises ModuleNotFoundError.
    hidden = tmp_path / "no_torch" / "torch"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n")
    env = {"PYTHONPATH": os.pathsep.join([str(hidden.parent), str(ROOT / "src")])}
    with ServerProcess([repo], "--exit-on-error=false", "--strict-readiness=false",
                       env=env) as server:
        log = server.log()
        assert "| addsub_pt " in log and "pip install 'tritium[torch]'" in log
        client = httpclient.InferenceServerClient(server.http_url)
        assert not client.is_model_ready("addsub_pt")
        a = np.ones((1, 4), np.float32)
        result = infer_arrays(httpclient, server.http_url, "addsub_onnx",
                              {"INPUT0": a, "INPUT1": a})
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a * 2)
        py = infer_arrays(httpclient, server.http_url, "add_sub", {"INPUT0": a[0], "INPUT1": a[0]})
        np.testing.assert_array_equal(py.as_numpy("OUTPUT0"), a[0] * 2)
