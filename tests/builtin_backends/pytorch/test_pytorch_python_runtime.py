"""The pytorch backend's Python runtime (`runtime: "model.py"`, Triton's PyTorch 2 backend):
nn.Module classes in a model.py, with and without a state_dict beside them, compiled or not, a
TorchScript file run the same way, served by a real server and compared with the modules called
here, over tritonclient http and grpc; the load failures a user can meet; and a
--backend-directory whose pytorch/model.py takes the place of the built-in runtime."""

from __future__ import annotations

import importlib.util
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from support import torch_models
from support.gpu import gpu
from support.models import write_model
from support.server_process import ServerProcess

CLIENTS = (("http", httpclient), ("grpc", grpcclient))

ADDSUB_PY = """\
import torch
from torch import nn


class AddSubNet(nn.Module):
    def forward(self, input0, input1):
        return input0 + input1, input0 - input1
"""

# Two classes: the model is the one the file defines first by name (Block is imported from
# nowhere, Net uses it); nn.Linear, imported, is not a candidate.
NEURALNET_PY = """\
import torch
from torch import nn
from torch.nn import Linear


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = Linear(8, 3)

    def forward(self, x):
        return torch.relu(self.fc(x)) * 2.0
"""

NO_MODULE_PY = "def forward(x):\n    return x\n"


def io(kind: str, name: str, dims: str) -> str:
    return f'{kind} {{ name: "{name}" data_type: TYPE_FP32 dims: {dims} }}\n'


def runtime_config(body: str, max_batch_size: int, extra: str = "") -> str:
    return (f'backend: "pytorch"\nruntime: "model.py"\nmax_batch_size: {max_batch_size}\n'
            f"{body}{extra}")


def parameter(key: str, value: str) -> str:
    return f"parameters {{ key: \"{key}\" value: {{ string_value: {json.dumps(value)} }} }}\n"


def load_block(path: Path) -> torch.nn.Module:
    spec = importlib.util.spec_from_file_location("neuralnet_model", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    block: torch.nn.Module = module.Block()
    return block


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("torch2_repo")
    addsub = io("input", "INPUT0", "[ 4 ]") + io("input", "INPUT1", "[ 4 ]") \
        + io("output", "OUTPUT0", "[ 4 ]") + io("output", "OUTPUT1", "[ 4 ]")
    write_model(repo, "addsub", runtime_config(
        addsub, 0, parameter("TORCH_COMPILE_OPTIONAL_PARAMETERS", '{"disable": true}')),
        files={"1/model.py": ADDSUB_PY})
    write_model(repo, "neuralnet", runtime_config(
        io("input", "INPUT", "[ 8 ]") + io("output", "OUTPUT", "[ 3 ]"), 8,
        parameter("NUM_THREADS", "2") + parameter("NUM_INTEROP_THREADS", "2")
        + parameter("TORCH_COMPILE_OPTIONAL_PARAMETERS", '{"backend": "eager"}')
        + "dynamic_batching { max_queue_delay_microseconds: 200000 }\n"),
        files={"1/model.py": NEURALNET_PY})
    torch.manual_seed(7)
    block = load_block(repo / "neuralnet" / "1" / "model.py")
    torch.save(block.state_dict(), repo / "neuralnet" / "1" / "model.pt")
    # TorchScript under the Python runtime; KIND_MODEL runs where its parameters are.
    write_model(repo, "scripted", runtime_config(
        io("input", "INPUT", "[ 8 ]") + io("output", "OUTPUT", "[ 3 ]"), 4,
        'default_model_filename: "weights.ts"\ninstance_group [ { kind: KIND_MODEL } ]\n'))
    torch_models.save(block, repo / "scripted" / "1" / "weights.ts")
    # Failures, each with its reason in the index.
    write_model(repo, "no_module", runtime_config(addsub, 0), files={"1/model.py": NO_MODULE_PY})
    write_model(repo, "compile_model_key", runtime_config(
        addsub, 0, parameter("TORCH_COMPILE_OPTIONAL_PARAMETERS", '{"model": 1}')),
        files={"1/model.py": ADDSUB_PY})
    write_model(repo, "unknown_compiler", runtime_config(
        addsub, 0, parameter("TORCH_COMPILE_OPTIONAL_PARAMETERS",
                             '{"backend": "no_such_compiler"}')),
        files={"1/model.py": ADDSUB_PY})
    write_model(repo, "model_kind_no_parameters", runtime_config(
        addsub, 0, "instance_group [ { kind: KIND_MODEL } ]\n"), files={"1/model.py": ADDSUB_PY})
    write_model(repo, "no_python_form", 'backend: "identity"\nruntime: "model.py"\n'
                'max_batch_size: 0\n' + io("input", "INPUT0", "[ 4 ]")
                + io("output", "OUTPUT0", "[ 4 ]"))
    return repo


@pytest.fixture(scope="module")
def server(repo: Path):
    with ServerProcess([repo], "--exit-on-error=false", "--strict-readiness=false",
                       "--log-verbose=1") as process:
        yield process


def expected_block(repo: Path, x: np.ndarray) -> np.ndarray:
    block = load_block(repo / "neuralnet" / "1" / "model.py")
    block.load_state_dict(torch.load(repo / "neuralnet" / "1" / "model.pt"))
    with torch.no_grad():
        return block(torch.from_numpy(x)).numpy()


def infer(client_module, url: str, model: str, arrays: dict[str, np.ndarray],
          outputs: list[str]) -> dict[str, np.ndarray]:
    client = client_module.InferenceServerClient(url)
    inputs = []
    for name, array in arrays.items():
        tensor = client_module.InferInput(name, list(array.shape), "FP32")
        tensor.set_data_from_numpy(array)
        inputs.append(tensor)
    result = client.infer(model, inputs)
    return {name: result.as_numpy(name) for name in outputs}


@pytest.mark.parametrize("protocol,client_module", CLIENTS)
def test_module_without_weights(server: ServerProcess, protocol: str, client_module) -> None:
    url = server.http_url if protocol == "http" else server.grpc_url
    a, b = np.random.rand(4).astype(np.float32), np.random.rand(4).astype(np.float32)
    got = infer(client_module, url, "addsub", {"INPUT0": a, "INPUT1": b}, ["OUTPUT0", "OUTPUT1"])
    np.testing.assert_allclose(got["OUTPUT0"], a + b, rtol=1e-6)
    np.testing.assert_allclose(got["OUTPUT1"], a - b, rtol=1e-6)


@pytest.mark.parametrize("protocol,client_module", CLIENTS)
def test_module_with_state_dict_and_torchscript(server: ServerProcess, repo: Path, protocol: str,
                                                client_module) -> None:
    url = server.http_url if protocol == "http" else server.grpc_url
    x = np.random.rand(4, 8).astype(np.float32)
    expected = expected_block(repo, x)
    for model in ("neuralnet", "scripted"):
        got = infer(client_module, url, model, {"INPUT": x}, ["OUTPUT"])["OUTPUT"]
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_requests_batched_together_are_split_back(server: ServerProcess, repo: Path) -> None:
    x = np.random.rand(8, 8).astype(np.float32)
    expected = expected_block(repo, x)
    before = server_stats(server, "neuralnet")
    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(infer, httpclient, server.http_url, "neuralnet",
                               {"INPUT": x[i:i + 1]}, ["OUTPUT"]) for i in range(8)]
        for i, future in enumerate(futures):
            np.testing.assert_allclose(future.result()["OUTPUT"], expected[i:i + 1],
                                       rtol=1e-5, atol=1e-6)
    after = server_stats(server, "neuralnet")
    assert after["inference_count"] - before["inference_count"] == 8
    # The 200 ms queue delay gathers the eight single requests into fewer executions.
    assert after["execution_count"] - before["execution_count"] < 8


def server_stats(server: ServerProcess, model: str) -> dict:
    stats = httpclient.InferenceServerClient(server.http_url).get_inference_statistics(model)
    return stats["model_stats"][0]


def test_load_logs_say_what_was_set(server: ServerProcess) -> None:
    log = server.log()
    for line in (
        "Torch parallelism settings for 'addsub': NUM_THREADS = 1; NUM_INTEROP_THREADS = 1;",
        "Torch parallelism settings for 'neuralnet': NUM_THREADS = 2; NUM_INTEROP_THREADS = 2;",
        "'torch.compile' optional parameter(s) for 'addsub': {'disable': True}",
        "'torch.compile' optional parameter(s) for 'neuralnet': {'backend': 'eager'}",
        "Model parameter file not found for 'addsub'",
        "Loading 'scripted' as TorchScript",
    ):
        assert line in log


@pytest.mark.parametrize("model,reason", [
    ("no_module", "Cannot find a subclass of torch.nn.Module in "),
    ("compile_model_key", "'model' is not an optional parameter for 'torch.compile'"),
    ("unknown_compiler", "no_such_compiler"),
    ("model_kind_no_parameters", "Cannot determine model device"),
    ("no_python_form",
     "unable to find Python backend based backend library 'model.py' for model "
     "'no_python_form', searched: "),
])
def test_load_failures_say_why(server: ServerProcess, model: str, reason: str) -> None:
    client = httpclient.InferenceServerClient(server.http_url)
    index = {entry["name"]: entry for entry in client.get_model_repository_index()}
    assert index[model]["state"] == "UNAVAILABLE"
    assert reason in index[model]["reason"]
    assert client.is_model_ready("addsub")  # the others serve


def test_backend_directory_runtime_comes_first(tmp_path: Path) -> None:
    backends = tmp_path / "backends"
    (backends / "pytorch").mkdir(parents=True)
    (backends / "pytorch" / "model.py").write_text(
        "import triton_python_backend_utils as pb_utils\n\n\n"
        "class TritonPythonModel:\n"
        "    def execute(self, requests):\n"
        "        return [pb_utils.InferenceResponse([pb_utils.Tensor('OUTPUT0',\n"
        "                pb_utils.get_input_tensor_by_name(r, 'INPUT0').as_numpy() * 10)])\n"
        "                for r in requests]\n")
    repo = tmp_path / "repo"
    write_model(repo, "tenfold", runtime_config(
        io("input", "INPUT0", "[ 4 ]") + io("output", "OUTPUT0", "[ 4 ]"), 0),
        files={"1/model.py": ADDSUB_PY})
    with ServerProcess([repo], f"--backend-directory={backends}") as server:
        a = np.arange(4, dtype=np.float32)
        got = infer(httpclient, server.http_url, "tenfold", {"INPUT0": a}, ["OUTPUT0"])
        np.testing.assert_array_equal(got["OUTPUT0"], a * 10)


WHERE_PY = """\
import torch
from torch import nn


class Where(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        device = torch.full([x.shape[0], 1], x.get_device(), dtype=torch.int64, device=x.device)
        return self.fc(x), device
"""


@gpu[0]
@gpu[1]
def test_kind_gpu_instance_runs_on_its_device(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_model(repo, "where", runtime_config(
        io("input", "INPUT", "[ 8 ]") + io("output", "OUTPUT", "[ 3 ]")
        + 'output { name: "DEVICE" data_type: TYPE_INT64 dims: [ 1 ] }\n', 4,
        parameter("TORCH_COMPILE_OPTIONAL_PARAMETERS", '{"disable": true}')
        + "instance_group [ { kind: KIND_GPU gpus: [ 0 ] } ]\n"),
        files={"1/model.py": WHERE_PY})
    spec = importlib.util.spec_from_file_location("where_model", repo / "where" / "1" / "model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    where = module.Where()
    torch.save(where.state_dict(), repo / "where" / "1" / "model.pt")
    x = np.random.rand(3, 8).astype(np.float32)
    with torch.no_grad():
        expected = where.fc(torch.from_numpy(x)).numpy()
    with ServerProcess([repo]) as server:
        got = infer(httpclient, server.http_url, "where", {"INPUT": x}, ["OUTPUT", "DEVICE"])
    np.testing.assert_allclose(got["OUTPUT"], expected, rtol=1e-4, atol=1e-5)
    assert got["DEVICE"].ravel().tolist() == [0, 0, 0]
