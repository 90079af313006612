"""CUDA shared memory on real GPUs: tritonclient.utils.cuda_shared_memory makes device
allocations and their IPC handles, the server (real NVML, real cuda-python) registers them over
HTTP and gRPC, reads inputs from and writes outputs to device memory, checks bounds, and refuses
to unregister a region a request in flight uses until it is answered. CPU-only twins of every
flow: test_cuda_shared_memory.py (fake binding)."""

from __future__ import annotations

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.gated_model import write_gated
from support.gpu import gpu
from support.models import standard_repository
from support.server_process import ServerProcess
from support.shared_memory_fixtures import (
    described_only,
    fp32_io,
    infer_in_flight,
    raw_infer,
    shm_input,
)

pytestmark = [*gpu]


@pytest.fixture(scope="module")
def cudashm():
    return pytest.importorskip("tritonclient.utils.cuda_shared_memory",
                               reason="needs cuda-python (pip install tritonclient[cuda])")


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory):
    """The standard models and `gated`; and `gated`'s gate."""
    repo = standard_repository(tmp_path_factory.mktemp("repo"))
    return repo, write_gated(repo)


@pytest.fixture(scope="module")
def gpu_server(repository):
    with ServerProcess([repository[0]], "--allow-client-shm=true") as process:
        yield process


@pytest.fixture
def device(cudashm):
    made = []

    def make(name: str, byte_size: int):
        made.append(cudashm.create_shared_memory_region(name, byte_size, 0))
        return made[-1]

    yield make
    for handle in made:
        cudashm.destroy_shared_memory_region(handle)


@pytest.fixture
def http(gpu_server):
    client = httpclient.InferenceServerClient(gpu_server.http_url)
    yield client
    client.unregister_cuda_shared_memory()
    assert client.get_cuda_shared_memory_status() == []
    client.close()


@pytest.mark.parametrize("module", [httpclient, grpcclient], ids=["http", "grpc"])
def test_identity_with_inputs_and_outputs_in_device_memory(http, gpu_server, cudashm, device,
                                                           module):
    data = np.arange(16, dtype=np.float32).reshape(1, 16) * 0.5
    inp, out = device("in", 64), device("out", 128)
    cudashm.set_shared_memory_region(inp, [data])
    client = module.InferenceServerClient(
        gpu_server.http_url if module is httpclient else gpu_server.grpc_url)
    client.register_cuda_shared_memory("in", cudashm.get_raw_handle(inp), 0, 64)
    client.register_cuda_shared_memory("out", cudashm.get_raw_handle(out), 0, 128)
    assert http.get_cuda_shared_memory_status() == [
        {"name": "in", "device_id": 0, "byte_size": 64},
        {"name": "out", "device_id": 0, "byte_size": 128}]
    inputs, outputs = fp32_io(module, data, "in", "out", 64, output_offset=64)
    result = client.infer("identity_fp32", inputs, outputs=outputs)
    assert described_only(result) == {"name": "OUTPUT0", "datatype": "FP32", "shape": [1, 16]}
    written = cudashm.get_contents_as_numpy(out, np.float32, [2, 16])
    np.testing.assert_array_equal(written[1:], data)
    client.unregister_cuda_shared_memory()
    assert http.get_cuda_shared_memory_status() == []
    client.close()


def test_registration_errors_on_real_device_memory(http, gpu_server, cudashm, device):
    region = device("c", 64)
    handle = cudashm.get_raw_handle(region)
    with pytest.raises(InferenceServerException) as info:
        http.register_cuda_shared_memory("c", handle, 0, 1 << 30)  # past the allocation
    assert info.value.message() == "failed to register shared memory region 'c': invalid args"
    with pytest.raises(InferenceServerException) as info:
        http.register_cuda_shared_memory("c", handle, 4096, 64)
    assert info.value.message().startswith(
        "failed to register CUDA shared memory region 'c': device_id 4096 is not a GPU")
    http.register_cuda_shared_memory("c", handle, 0, 64)
    with pytest.raises(InferenceServerException) as info:
        http.register_cuda_shared_memory("c", handle, 0, 64)
    assert info.value.message() == "shared memory region 'c' already in manager"
    reply = raw_infer(gpu_server, [shm_input("c", 64, 4)])
    assert (reply.status, reply.error) == (
        400, "Invalid offset + byte size for shared memory region: 'c'")


def test_unregister_while_a_request_is_in_flight(http, gpu_server, repository, cudashm, device):
    data = np.arange(16, dtype=np.float32).reshape(1, 16)
    inp, out = device("in", 64), device("out", 64)
    cudashm.set_shared_memory_region(inp, [data])
    http.register_cuda_shared_memory("in", cudashm.get_raw_handle(inp), 0, 64)
    http.register_cuda_shared_memory("out", cudashm.get_raw_handle(out), 0, 64)
    pending = infer_in_flight(gpu_server.http_url, "gated", data, 64)
    gpu_server.wait_pending("gated", 1)
    with pytest.raises(InferenceServerException) as info:
        http.unregister_cuda_shared_memory()
    assert info.value.message() == (
        "Failed to unregister the following cuda shared memory regions: in ,out ,")
    repository[1].write_text("")  # the model answers
    assert described_only(pending.result(60))["shape"] == [1, 16]
    np.testing.assert_array_equal(cudashm.get_contents_as_numpy(out, np.float32, [1, 16]), data)
    http.unregister_cuda_shared_memory()
    assert http.get_cuda_shared_memory_status() == []
