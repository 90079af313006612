"""The python backend on a real GPU (marked `gpu`: `make test-gpu` on the GPU machine; skipped
with the reason elsewhere). A KIND_GPU python model computes with torch (and cupy, where
installed) on `cuda:<model_instance_device_id>` and answers the CUDA tensor itself; the client
gets the right numbers over HTTP and gRPC. BLS passes a GPU tensor to a python model taking GPU
inputs by CUDA IPC (no host copy), and to one that does not as a host copy. A stub holding GPU
memory frees it when it is killed, or when its model is unloaded.

The models live in tests/support/python_models/gpu/.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from support import PYTHON_MODELS
from support.gpu import gpu, gpu_memory
from support.models import write_model
from support.server_process import ServerProcess

pytestmark = [*gpu]

MODELS = PYTHON_MODELS / "gpu"
HAS_CUPY = importlib.util.find_spec("cupy") is not None


def config(name: str, inputs: str, outputs: str, group: str = "{ kind: KIND_GPU }",
           parameters: dict[str, str] | None = None) -> str:
    params = "\n".join(
        f'parameters {{ key: "{key}" value: {{ string_value: "{value}" }} }}'
        for key, value in (parameters or {}).items())
    return (f'name: "{name}"\nbackend: "python"\nmax_batch_size: 0\n'
            f"input [ {inputs} ]\noutput [ {outputs} ]\ninstance_group [ {group} ]\n{params}\n")


FP32_IN = '{ name: "IN" data_type: TYPE_FP32 dims: [ 2, 3 ] }'
OUT_CHECKS = ('{ name: "OUT" data_type: TYPE_FP32 dims: [ 2, 3 ] }, '
              '{ name: "CHECKS" data_type: TYPE_STRING dims: [ 1 ] }')


def add(repo: Path, name: str, source: str, text: str) -> None:
    write_model(repo, name, text, files={"1/model.py": (MODELS / source).read_text()})


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    repo = tmp_path_factory.mktemp("gpu_python") / "repo"
    add(repo, "torch_gpu", "torch_gpu.py", config("torch_gpu", FP32_IN, OUT_CHECKS))
    if HAS_CUPY:
        add(repo, "cupy_gpu", "cupy_gpu.py", config("cupy_gpu", FP32_IN, OUT_CHECKS))
    x_in = '{ name: "X" data_type: TYPE_FP32 dims: [ 2, 3 ] }'
    add(repo, "callee_gpu", "bls_gpu_callee.py", config(
        "callee_gpu", x_in, OUT_CHECKS, parameters={"FORCE_CPU_ONLY_INPUT_TENSORS": "no"}))
    add(repo, "callee_cpu", "bls_gpu_callee.py", config("callee_cpu", x_in, OUT_CHECKS))
    for callee in ("callee_gpu", "callee_cpu"):
        name = f"caller_to_{callee}"
        add(repo, name, "bls_gpu_caller.py", config(
            name, FP32_IN, OUT_CHECKS,
            parameters={"CALLEE": callee, "FORCE_CPU_ONLY_INPUT_TENSORS": "no"}))
    with ServerProcess([repo]) as process:
        yield process


def infer(server: ServerProcess, protocol: str, model: str, x: np.ndarray
          ) -> tuple[np.ndarray, dict]:
    module = httpclient if protocol == "http" else grpcclient
    url = server.http_url if protocol == "http" else server.grpc_url
    client = module.InferenceServerClient(url)
    tensor = module.InferInput("IN", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x)
    result = client.infer(model, [tensor])
    return result.as_numpy("OUT"), json.loads(result.as_numpy("CHECKS")[0])


X = np.arange(6, dtype=np.float32).reshape(2, 3)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_torch_model_answers_a_cuda_tensor(server: ServerProcess, protocol: str) -> None:
    out, checks = infer(server, protocol, "torch_gpu", X)
    np.testing.assert_array_equal(out, 2 * X + 1)
    assert checks == {
        "kind": "GPU",
        "input_is_cpu": True,
        "output_is_cpu": False,
        "output_shape": [2, 3],
        "dlpack_device": [2, 0],
        "same_memory": True,
        "current_at_init": 0,
        "current_at_execute": 0,
        "as_numpy": "Tensor is stored in GPU and cannot be converted to NumPy.",
    }


@pytest.mark.skipif(not HAS_CUPY, reason="cupy is not installed")
@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_cupy_model_answers_a_cuda_array(server: ServerProcess, protocol: str) -> None:
    out, checks = infer(server, protocol, "cupy_gpu", X)
    np.testing.assert_array_equal(out, 2 * X + 1)
    assert checks == {"output_is_cpu": False, "dlpack_device": [2, 0], "same_memory": True,
                      "current_at_execute": 0}


def test_bls_gpu_tensor_reaches_a_gpu_input_model_by_cuda_ipc(server: ServerProcess) -> None:
    out, checks = infer(server, "http", "caller_to_callee_gpu", X)
    np.testing.assert_array_equal(out, 3 * (X + 1))
    assert checks == {
        "input_is_cpu": True,  # from the network: host memory, whatever the model accepts
        "host_copies": 0,  # the GPU tensor went by CUDA IPC
        "callee": {"input_is_cpu": False, "input_device": "cuda:0"},
    }


def test_bls_gpu_tensor_reaches_a_cpu_input_model_as_a_host_copy(server: ServerProcess) -> None:
    out, checks = infer(server, "grpc", "caller_to_callee_cpu", X)
    np.testing.assert_array_equal(out, 3 * (X + 1))
    assert checks == {
        "input_is_cpu": True,
        "host_copies": 1,  # FORCE_CPU_ONLY_INPUT_TENSORS defaults to "yes": copied once
        "callee": {"input_is_cpu": True, "input_device": "cpu"},
    }


def test_bls_gpu_tensors_repeatedly(server: ServerProcess) -> None:
    """Many calls: each maps (and unmaps) the caller's memory in the callee, and the caller's
    allocator reuses its blocks; every answer is still right."""
    for step in range(20):
        x = X + step
        out, _ = infer(server, "http", "caller_to_callee_gpu", x)
        np.testing.assert_array_equal(out, 3 * (x + 1))


# -- GPU memory goes with the stub ---------------------------------------------------------

HOLD_BYTES = 2048 * 1024 * 1024


def free_gpu_bytes() -> int:
    import torch

    return torch.cuda.mem_get_info(0)[0]


def stub_gpu_bytes(pid: int) -> int | None:
    """What the stub holds on GPU 0, where NVML lists it (support.gpu.gpu_memory)."""
    return gpu_memory(pid)[1]


def wait_until(condition: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def holder_pid(client: httpclient.InferenceServerClient) -> int:
    tensor = httpclient.InferInput("IN", [1], "INT32")
    tensor.set_data_from_numpy(np.array([0], dtype=np.int32))
    return int(client.infer("holder", [tensor]).as_numpy("PID")[0])


@pytest.fixture
def holder_repo(tmp_path: Path) -> tuple[Path, Path]:
    flag = tmp_path / "hold"
    flag.touch()
    repo = tmp_path / "repo"
    add(repo, "holder", "gpu_memory_holder.py", config(
        "holder", '{ name: "IN" data_type: TYPE_INT32 dims: [ 1 ] }',
        '{ name: "PID" data_type: TYPE_INT64 dims: [ 1 ] }',
        parameters={"HOLD_WHILE_EXISTS": str(flag)}))
    return repo, flag


def test_killed_stub_frees_its_gpu_memory(holder_repo: tuple[Path, Path]) -> None:
    repo, flag = holder_repo
    with ServerProcess([repo]) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        pid = holder_pid(client)
        free_held = free_gpu_bytes()
        held = stub_gpu_bytes(pid)
        flag.unlink()  # the restarted stub holds nothing
        os.kill(pid, signal.SIGKILL)
        # The stub is reaped (no zombie keeps its CUDA context), and the memory comes back.
        assert wait_until(lambda: not os.path.exists(f"/proc/{pid}"))
        assert wait_until(lambda: client.is_model_ready("holder"))
        new_pid = holder_pid(client)
        assert new_pid != pid
        if held is not None:  # NVML lists the stub: its own figure
            assert held > HOLD_BYTES * 3 // 4
            assert wait_until(lambda: stub_gpu_bytes(pid) is None)
        else:
            assert wait_until(lambda: free_gpu_bytes() - free_held > HOLD_BYTES * 3 // 4), (
                f"GPU memory still used after the stub was killed: "
                f"{free_gpu_bytes() - free_held} bytes came back, {HOLD_BYTES} were held")


def test_unloaded_model_frees_its_gpu_memory(holder_repo: tuple[Path, Path]) -> None:
    repo, _flag = holder_repo
    with ServerProcess([repo], "--model-control-mode=explicit") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        free_before = free_gpu_bytes()
        client.load_model("holder")
        pid = holder_pid(client)
        held = stub_gpu_bytes(pid)
        if held is not None:  # NVML lists the stub: its own figure
            assert held > HOLD_BYTES * 3 // 4
        else:
            assert free_before - free_gpu_bytes() > HOLD_BYTES * 3 // 4
        client.unload_model("holder")
        assert wait_until(lambda: not os.path.exists(f"/proc/{pid}"))
        if held is not None:
            assert wait_until(lambda: stub_gpu_bytes(pid) is None)
        else:
            # Everything the stub had (its 2 GiB and its CUDA context) is back, give or take
            # what other processes did meanwhile.
            assert wait_until(lambda: free_before - free_gpu_bytes() < 256 * 1024 * 1024), (
                f"{free_before - free_gpu_bytes()} bytes of GPU memory still used after unload")
