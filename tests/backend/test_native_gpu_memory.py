"""TRITONSERVER_MEMORY_GPU in the C API: a compiled backend stages its input in device memory
from the memory manager, sends it by BLS as GPU input data, gets the answer in device memory
from its own response allocator, and copies it back (tests/support/native_backends/bls.cc with
its "device_memory" parameter).

Each flow runs twice: over the stand-in CUDA runtime (tests/support/fake_cudart: device memory
the host cannot touch, so a host access of a device pointer crashes the server) on every
machine, and over the real runtime on a GPU (`gpu`, `make test-gpu`)."""

from __future__ import annotations

import ctypes.util

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.gpu import cuda_device_count as gpu_count
from support.gpu import gpu
from support.native_fixtures import compile_backends, compile_fake_cudart, write_model
from support.server_process import ServerProcess

FP32 = ('input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
        'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n')
RUNTIMES = ["stand-in", pytest.param("cuda", marks=gpu)]


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    base = tmp_path_factory.mktemp("gpu_memory")
    backends = compile_backends(base / "backends", {
        "native_identity": "identity", "native_bls": "bls", "native_accumulate": "accumulate"})
    repo = base / "models"
    write_model(repo, "identity_fp32", 'backend: "native_identity"\n' + FP32)
    # No instance_group: KIND_GPU on a GPU machine, KIND_CPU (device 0) elsewhere.
    write_model(repo, "gpu_memory", 'backend: "native_bls"\n' + FP32 +
                'output [ { name: "LIVE" data_type: TYPE_INT64 dims: [ 1 ] } ]\n'
                'parameters { key: "device_memory" value: { string_value: "1" } }\n')
    write_model(repo, "device_state", 'backend: "native_accumulate"\n'
                'input [ { name: "INPUT" data_type: TYPE_FP32 dims: [ 1 ] } ]\n'
                'output [ { name: "OUTPUT" data_type: TYPE_FP32 dims: [ 1 ] } ]\n'
                'sequence_batching { state [ { input_name: "STATE_IN" output_name: "STATE_OUT"'
                ' data_type: TYPE_FP32 dims: [ 1 ] } ] }\n'
                'parameters { key: "device_state" value: { string_value: "1" } }\n')
    return backends, repo, compile_fake_cudart(base / "fake_cudart")


@pytest.fixture(scope="module", params=RUNTIMES)
def server(request, repository):
    backends, repo, stand_in_env = repository
    env = stand_in_env if request.param == "stand-in" else None
    with ServerProcess([repo], f"--backend-directory={backends}", env=env) as process:
        process.runtime = request.param
        yield process


def _infer(client_module, url, data, parameters=None):
    client = (httpclient.InferenceServerClient(url) if client_module is httpclient
              else grpcclient.InferenceServerClient(url))
    tensor = client_module.InferInput("INPUT0", list(data.shape), "FP32")
    tensor.set_data_from_numpy(data)
    return client.infer("gpu_memory", [tensor], parameters=parameters)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_device_buffers_round_trip_through_bls(server, protocol):
    module, url = ((httpclient, server.http_url) if protocol == "http"
                   else (grpcclient, server.grpc_url))
    data = np.linspace(-3, 5, 1000, dtype=np.float32)
    result = _infer(module, url, data)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), 2 * data)
    if server.runtime == "stand-in":  # every device buffer was freed
        assert result.as_numpy("LIVE").tolist() == [0]


def test_an_implicit_state_kept_in_device_memory(server):
    """TRITONBACKEND_StateBuffer in GPU memory, as a backend asks for it (Triton's
    implicit_state test backend does): the backend writes the state there, the server reads it
    back at TRITONBACKEND_StateUpdate and the next request of the sequence starts from it."""
    client = grpcclient.InferenceServerClient(server.grpc_url)
    sums = []
    for step, value in enumerate((1.5, 2.0, 4.0)):
        tensor = grpcclient.InferInput("INPUT", [1], "FP32")
        tensor.set_data_from_numpy(np.array([value], np.float32))
        result = client.infer("device_state", [tensor], sequence_id=42,
                              sequence_start=step == 0, sequence_end=step == 2)
        sums.append(float(result.as_numpy("OUTPUT")[0]))
    assert sums == [1.5, 3.5, 7.5]
    if server.runtime == "stand-in":  # the state's device buffers were freed with the requests
        result = _infer(httpclient, server.http_url, np.ones(2, np.float32))
        assert result.as_numpy("LIVE").tolist() == [0]


def test_a_gpu_that_does_not_exist_is_an_error_and_the_server_keeps_serving(server):
    data = np.ones(4, np.float32)
    with pytest.raises(InferenceServerException) as caught:
        _infer(httpclient, server.http_url, data, parameters={"device": 7})
    message = str(caught.value)
    assert "TRITONBACKEND_MemoryManagerAllocate: cannot allocate 16 bytes on GPU 7" in message
    assert "invalid device ordinal" in message
    result = _infer(grpcclient, server.grpc_url, data)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), 2 * data)


def test_without_a_gpu_device_memory_is_unavailable_with_the_reason(repository):
    """No stand-in: the machine's own runtime answers (no driver, no GPU) or there is none."""
    if gpu_count():
        pytest.skip("this machine has a GPU")
    backends, repo, _ = repository
    with ServerProcess([repo], f"--backend-directory={backends}") as process:
        with pytest.raises(InferenceServerException) as caught:
            _infer(httpclient, process.http_url, np.ones(2, np.float32))
        assert caught.value.status() == "503"
        message = caught.value.message()
        assert message.startswith("TRITONBACKEND_MemoryManagerAllocate: ")
        if ctypes.util.find_library("cudart") is None:
            assert ("GPU memory needs the CUDA runtime (libcudart.so), which could not be "
                    "loaded") in message
            assert "install the CUDA toolkit" in message
        else:  # a CUDA runtime without a driver or a device
            assert "cannot allocate 8 bytes on GPU 0: " in message
        assert httpclient.InferenceServerClient(process.http_url).is_server_live()


def test_the_runtime_cuda_pythons_pathfinder_finds_is_tried_first(monkeypatch):
    """The path handed to the library is the one cuda.pathfinder loaded; none without it."""
    import sys
    import types

    from tritium.backend.native import library

    found = types.SimpleNamespace(abs_path="/opt/nvidia/cu13/lib/libcudart.so.13")
    pathfinder = types.ModuleType("cuda.pathfinder")
    pathfinder.load_nvidia_dynamic_lib = lambda name: found if name == "cudart" else None
    monkeypatch.setitem(sys.modules, "cuda", types.ModuleType("cuda"))
    monkeypatch.setitem(sys.modules, "cuda.pathfinder", pathfinder)
    assert library._cuda_runtime_path() == "/opt/nvidia/cu13/lib/libcudart.so.13"

    def not_found(name):
        raise OSError(f"{name} not found")
    pathfinder.load_nvidia_dynamic_lib = not_found
    assert library._cuda_runtime_path() is None
    monkeypatch.setitem(sys.modules, "cuda.pathfinder", None)  # not installed
    assert library._cuda_runtime_path() is None
