"""GPU memory in Triton's in-process API: outputs in device memory, custom device allocators,
CUDA tensors as inputs (cupy does the copies, as in Triton's API; torch reads the results)."""

from __future__ import annotations

import numpy
import pytest

import tritonserver
from support.gpu import gpu
from support.models import identity_config, write_model

pytestmark = [*gpu]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp("inprocess_gpu")
    write_model(repo, "identity_fp32", identity_config("identity_fp32"))
    server = tritonserver.Server(model_repository=str(repo), exit_timeout=5)
    server.start(wait_until_ready=True)
    yield server
    server.stop()


def values() -> numpy.ndarray:
    return numpy.arange(12, dtype=numpy.float32).reshape(2, 6) * 0.5


@pytest.mark.parametrize("device", ["gpu", "gpu:0", tritonserver.MemoryType.GPU,
                                    (tritonserver.MemoryType.GPU, 0),
                                    (tritonserver.DLDeviceType.kDLCUDA, 0)])
def test_gpu_output_is_read_by_torch_on_cuda(server, device):
    import torch

    (response,) = server.model("identity_fp32").infer(
        inputs={"INPUT0": values()}, output_memory_type=device)
    output = response.outputs["OUTPUT0"]
    assert output.memory_type == tritonserver.MemoryType.GPU and output.memory_type_id == 0
    assert output.__dlpack_device__() == (tritonserver.DLDeviceType.kDLCUDA, 0)
    tensor = torch.from_dlpack(output)
    assert tensor.device == torch.device("cuda:0")
    assert tensor.data_ptr() == output.data_ptr  # a view of the output's device memory
    numpy.testing.assert_array_equal(tensor.cpu().numpy(), values())
    numpy.testing.assert_array_equal(numpy.from_dlpack(output.to_host()), values())


def test_custom_allocator_giving_device_memory_is_used(server):
    import torch

    class TorchAllocator(tritonserver.MemoryAllocator):
        def __init__(self) -> None:
            self.calls: list[tuple[int, object, int, str]] = []
            self.owners: list[torch.Tensor] = []

        def allocate(self, size, memory_type, memory_type_id, tensor_name):
            self.calls.append((size, memory_type, memory_type_id, tensor_name))
            owner = torch.zeros(size, dtype=torch.uint8, device=f"cuda:{memory_type_id}")
            self.owners.append(owner)
            return tritonserver.MemoryBuffer.from_dlpack(owner)

    allocator = TorchAllocator()
    (response,) = server.model("identity_fp32").infer(
        inputs={"INPUT0": values()}, output_memory_type="gpu:0",
        output_memory_allocator=allocator)
    assert allocator.calls == [(48, tritonserver.MemoryType.GPU, 0, "OUTPUT0")]
    output = response.outputs["OUTPUT0"]
    assert output.data_ptr == allocator.owners[0].data_ptr()
    written = allocator.owners[0].view(torch.float32).reshape(2, 6)
    numpy.testing.assert_array_equal(written.cpu().numpy(), values())


def test_cuda_tensor_inputs_are_accepted(server):
    import torch

    source = torch.from_numpy(values()).to("cuda:0")
    tensor = tritonserver.Tensor.from_dlpack(source)
    assert tensor.memory_type == tritonserver.MemoryType.GPU
    assert tensor.data_ptr == source.data_ptr()
    for given in (source, tensor):
        (response,) = server.model("identity_fp32").infer(inputs={"INPUT0": given})
        output = response.outputs["OUTPUT0"]
        assert output.memory_type == tritonserver.MemoryType.CPU
        numpy.testing.assert_array_equal(numpy.from_dlpack(output), values())


def test_tensor_moves_between_host_and_device():
    import torch

    host = tritonserver.Tensor.from_dlpack(values())
    device = host.to_device("gpu:0")
    assert device.memory_type == tritonserver.MemoryType.GPU
    numpy.testing.assert_array_equal(torch.from_dlpack(device).cpu().numpy(), values())
    back = device.to_host()
    assert back.memory_type == tritonserver.MemoryType.CPU
    numpy.testing.assert_array_equal(numpy.from_dlpack(back), values())


def test_gpu_that_does_not_exist_is_refused(server):
    with pytest.raises(tritonserver.InvalidArgumentError, match="does not exist"):
        list(server.model("identity_fp32").infer(inputs={"INPUT0": values()},
                                                 output_memory_type="gpu:64"))

