"""Custom operator libraries (`model_operations { op_library_filename }`): an ONNX graph using
onnxruntime-extensions' StringLower, and a TorchScript module calling an operator from a
TORCH_LIBRARY compiled here, each served with the library its configuration names; the same
TorchScript model with the library LD_PRELOADed instead (how Triton's QA serves libtorch
custom operators); and a library outside the model's folder refused at load."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime_extensions
import pytest
import torch
import tritonclient.http as httpclient
from onnx import TensorProto, helper

from support.models import write_model
from support.server_process import ServerProcess

MODULO_OP = textwrap.dedent("""\
    #include <ATen/ATen.h>
    #include <torch/library.h>

    static at::Tensor modulo(const at::Tensor& a, const at::Tensor& b) { return at::fmod(a, b); }

    TORCH_LIBRARY(tritium_test, m) { m.def("modulo(Tensor a, Tensor b) -> Tensor", modulo); }
""")


class Modulo(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.ops.tritium_test.modulo(a, b)


def compile_modulo(directory: Path) -> Path:
    """libmodulo.so, built against the installed torch's headers and libraries."""
    torch_dir = Path(torch.__file__).parent
    source = directory / "modulo.cc"
    source.write_text(MODULO_OP)
    library = directory / "libmodulo.so"
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    result = subprocess.run(
        [os.environ.get("CXX", "g++"), "-O1", "-shared", "-fPIC", "-std=c++17", "-w",
         f"-D_GLIBCXX_USE_CXX11_ABI={abi}", f"-I{torch_dir / 'include'}",
         f"-I{torch_dir / 'include' / 'torch' / 'csrc' / 'api' / 'include'}", str(source),
         "-o", str(library), f"-L{torch_dir / 'lib'}", "-lc10", "-ltorch_cpu",
         f"-Wl,-rpath,{torch_dir / 'lib'}"],
        capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr
    return library


def string_lower() -> onnx.ModelProto:
    """LOWER = StringLower(TEXT), an operator of onnxruntime-extensions' ai.onnx.contrib."""
    graph = helper.make_graph(
        [helper.make_node("StringLower", ["TEXT"], ["LOWER"], domain="ai.onnx.contrib")],
        "string_lower",
        [helper.make_tensor_value_info("TEXT", TensorProto.STRING, [-1])],
        [helper.make_tensor_value_info("LOWER", TensorProto.STRING, [-1])])
    model = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.contrib", 1)])
    model.ir_version = 8
    return model


ONNX_IO = ('input [ { name: "TEXT" data_type: TYPE_STRING dims: [ -1 ] } ]\n'
           'output [ { name: "LOWER" data_type: TYPE_STRING dims: [ -1 ] } ]\n')
TORCH_IO = ('input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 5 ] },'
            ' { name: "INPUT__1" data_type: TYPE_FP32 dims: [ 5 ] } ]\n'
            'output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 5 ] } ]\n')


def ops(*libraries: str) -> str:
    return "".join(f'model_operations {{ op_library_filename: "{name}" }}\n'
                   for name in libraries)


@pytest.fixture(scope="module")
def modulo_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    library = compile_modulo(tmp_path_factory.mktemp("modulo_op"))
    torch.ops.load_library(str(library))  # so that the module below can be scripted
    return library


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory, modulo_library: Path) -> Path:
    repo = tmp_path_factory.mktemp("op_libraries")
    extensions = Path(onnxruntime_extensions.get_library_path())
    onnx_model = string_lower().SerializeToString()
    # The library beside the configuration, named relative to the model's folder.
    write_model(repo, "lower", 'platform: "onnxruntime_onnx"\nmax_batch_size: 0\n' + ONNX_IO
                + ops("ops/libortextensions.so"))
    (repo / "lower" / "ops").mkdir()
    shutil.copy(extensions, repo / "lower" / "ops" / "libortextensions.so")
    (repo / "lower" / "1" / "model.onnx").write_bytes(onnx_model)
    write_model(repo, "lower_without_ops", 'platform: "onnxruntime_onnx"\nmax_batch_size: 0\n'
                + ONNX_IO)
    (repo / "lower_without_ops" / "1" / "model.onnx").write_bytes(onnx_model)
    write_model(repo, "lower_ops_elsewhere", 'platform: "onnxruntime_onnx"\n'
                'max_batch_size: 0\n' + ONNX_IO + ops(str(extensions)))
    (repo / "lower_ops_elsewhere" / "1" / "model.onnx").write_bytes(onnx_model)
    write_model(repo, "modulo", 'platform: "pytorch_libtorch"\nmax_batch_size: 0\n' + TORCH_IO
                + ops("libmodulo.so"))
    shutil.copy(modulo_library, repo / "modulo" / "libmodulo.so")
    with warnings.catch_warnings():  # TorchScript is deprecated, and what Triton serves
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.script(Modulo()).save(str(repo / "modulo" / "1" / "model.pt"))
    return repo


@pytest.fixture(scope="module")
def server(repo: Path):
    with ServerProcess([repo], "--exit-on-error=false", "--strict-readiness=false") as process:
        yield process


def lower(url: str, model: str, words: list[str]) -> list[bytes]:
    client = httpclient.InferenceServerClient(url)
    text = httpclient.InferInput("TEXT", [len(words)], "BYTES")
    text.set_data_from_numpy(np.array(words, dtype=object))
    return list(client.infer(model, [text]).as_numpy("LOWER"))


def modulo(url: str, model: str) -> tuple[np.ndarray, np.ndarray]:
    a = np.array([7, 8, 9, 10, 11], dtype=np.float32)
    b = np.array([3, 3, 4, 4, 5], dtype=np.float32)
    client = httpclient.InferenceServerClient(url)
    inputs = [httpclient.InferInput(name, [5], "FP32") for name in ("INPUT__0", "INPUT__1")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    return client.infer(model, inputs).as_numpy("OUTPUT__0"), np.fmod(a, b)


def index(url: str) -> dict[str, dict]:
    client = httpclient.InferenceServerClient(url)
    return {entry["name"]: entry for entry in client.get_model_repository_index()}


def test_onnx_graph_runs_the_libraries_operator(server: ServerProcess) -> None:
    assert lower(server.http_url, "lower", ["HeLLo", "WORLD"]) == [b"hello", b"world"]


def test_torchscript_module_runs_the_libraries_operator(server: ServerProcess) -> None:
    got, expected = modulo(server.http_url, "modulo")
    np.testing.assert_array_equal(got, expected)


def test_without_the_library_the_operator_is_unknown(server: ServerProcess) -> None:
    entry = index(server.http_url)["lower_without_ops"]
    assert entry["state"] == "UNAVAILABLE"
    assert "StringLower" in entry["reason"]


def test_a_library_outside_the_model_folder_is_refused(server: ServerProcess) -> None:
    entry = index(server.http_url)["lower_ops_elsewhere"]
    assert entry["state"] == "UNAVAILABLE"
    assert "model_operations.op_library_filename[0]" in entry["reason"]
    assert "is not allowed; it must be a path inside the model's folder" in entry["reason"]


def test_preloaded_library_serves_torchscript_without_model_operations(
        tmp_path: Path, repo: Path, modulo_library: Path) -> None:
    """Triton's QA way: LD_PRELOAD the operator library into the server."""
    preloaded = tmp_path / "repo"
    shutil.copytree(repo / "modulo", preloaded / "modulo")
    config = preloaded / "modulo" / "config.pbtxt"
    config.write_text(config.read_text().replace(ops("libmodulo.so"), ""))
    (preloaded / "modulo" / "libmodulo.so").unlink()
    with ServerProcess([preloaded], env={"LD_PRELOAD": str(modulo_library)}) as server:
        got, expected = modulo(server.http_url, "modulo")
        np.testing.assert_array_equal(got, expected)
