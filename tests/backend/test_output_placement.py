"""A compiled backend asks where each output should go (TRITONBACKEND_RequestOutputBufferProperties)
and the HTTP and gRPC frontends answer as Triton's do: an output the client put in a CUDA
shared-memory region goes to that region's GPU, unless the backend's byte size does not fit the
region's window; any other output goes to host memory.

The test backend `placement` (tests/support/native_backends/placement.cc) reports the answers it
got, as a response parameter or (request parameter `report_as_error`) as its error. The server
has one fake GPU (the H200 probe's NVML and the stand-in CUDA binding), whose "device memory"
is a /dev/shm object: the real frontends and CUDA shared-memory code run on a CPU-only machine.
"""

from __future__ import annotations

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.cuda_shared_memory_fixtures import device_regions, fake_cuda_env  # noqa: F401
from support.native_fixtures import compile_backends, write_model
from support.server_process import ServerProcess
from support.shared_memory_fixtures import Region

IO = ('max_batch_size: 8\n'
      'input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 4 ] },'
      ' { name: "INPUT1" data_type: TYPE_INT32 dims: [ 4 ] } ]\n'
      'output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 4 ] },'
      ' { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 4 ] } ]\n')


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("placement")
    backends = compile_backends(base / "backends", {"placement": "placement"})
    write_model(base / "models", "placement", 'backend: "placement"\n' + IO)
    with ServerProcess([base / "models"], f"--backend-directory={backends}",
                       "--allow-client-shm=true", env=fake_cuda_env()) as process:
        yield process


PROTOCOLS = {"http": httpclient, "grpc": grpcclient}


@pytest.fixture(params=list(PROTOCOLS))
def client(request, server):
    module = PROTOCOLS[request.param]
    client = module.InferenceServerClient(
        server.http_url if module is httpclient else server.grpc_url)
    yield module, client
    client.unregister_cuda_shared_memory()
    client.unregister_system_shared_memory()
    client.close()


DATA = np.arange(4, dtype=np.int32).reshape(1, 4)  # 16 bytes an output


def _infer(module, client, placed: dict[str, tuple[str, int]], report_as_error=False) -> str:
    """The placement report for a request whose outputs in `placed` go to (region, size)."""
    inputs = []
    for name in ("INPUT0", "INPUT1"):
        inputs.append(module.InferInput(name, [1, 4], "INT32"))
        inputs[-1].set_data_from_numpy(DATA)
    outputs = []
    for name in ("OUTPUT0", "OUTPUT1"):
        outputs.append(module.InferRequestedOutput(name))
        if name in placed:
            outputs[-1].set_shared_memory(*placed[name])
    parameters = {"report_as_error": True} if report_as_error else None
    if report_as_error:
        with pytest.raises(InferenceServerException) as failed:
            client.infer("placement", inputs, outputs=outputs, parameters=parameters)
        return failed.value.message()
    result = client.infer("placement", inputs, outputs=outputs)
    response = result.get_response()
    if module is httpclient:
        return response["parameters"]["output_properties"]
    return response.parameters["output_properties"].string_param


def test_outputs_in_host_memory_are_asked_for_in_host_memory(client):
    module, c = client
    assert _infer(module, c, {}) == "OUTPUT0=CPU/0 OUTPUT1=CPU/0"


def test_an_output_in_cuda_shared_memory_goes_to_its_gpu(client, device_regions):  # noqa: F811
    module, c = client
    region = device_regions(16)
    c.register_cuda_shared_memory("out0", region.raw_handle, 0, 16)
    assert _infer(module, c, {"OUTPUT0": ("out0", 16)}) == "OUTPUT0=GPU/0 OUTPUT1=CPU/0"
    np.testing.assert_array_equal(region.get(np.int32, [1, 4]), DATA)


def test_a_region_too_small_for_the_output_answers_host_memory(client,
                                                               device_regions):  # noqa: F811
    module, c = client
    small = device_regions(8)
    c.register_cuda_shared_memory("small", small.raw_handle, 0, 8)
    # (The output would not fit there: the backend reports instead of answering.)
    assert _infer(module, c, {"OUTPUT0": ("small", 8), "OUTPUT1": ("small", 8)},
                  report_as_error=True) == "OUTPUT0=CPU/0 OUTPUT1=CPU/0"


def test_an_output_in_system_shared_memory_goes_to_host_memory(client):
    module, c = client
    region = Region(16)
    try:
        c.register_system_shared_memory("sys", region.key, 16)
        assert _infer(module, c, {"OUTPUT1": ("sys", 16)}) == "OUTPUT0=CPU/0 OUTPUT1=CPU/0"
        np.testing.assert_array_equal(region.get(np.int32, [1, 4]), DATA)
    finally:
        region.destroy()
