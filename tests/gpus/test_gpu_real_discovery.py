"""On a machine with GPUs: NVML's answer is what CUDA sees, and a server places unspecified and
KIND_GPU groups on them (no fake NVML here)."""

from __future__ import annotations

from pathlib import Path

from support.gpu import cuda_device_count, gpu
from support.gpu import instance_groups as groups
from support.models import identity_config, write_model
from support.server_process import ServerProcess
from tritium.gpus import discover

pytestmark = [*gpu]


def test_nvml_sees_what_cuda_sees() -> None:
    import torch

    inventory = discover()
    assert len(inventory.devices) == cuda_device_count()
    for device in inventory.devices:
        properties = torch.cuda.get_device_properties(device.device_id)
        assert device.name == properties.name
        assert device.compute_capability == (properties.major, properties.minor)
        assert device.uuid.lower().endswith(str(properties.uuid).lower())


def test_cuda_visible_devices_renumbers(tmp_path: Path) -> None:
    inventory = discover(environ={"CUDA_VISIBLE_DEVICES": ""})
    assert inventory.devices == ()
    last = cuda_device_count() - 1
    inventory = discover(environ={"CUDA_VISIBLE_DEVICES": str(last)})
    assert [(d.device_id, d.nvml_index) for d in inventory.devices] == [(0, last)]


def test_a_server_on_this_machine_places_on_every_gpu(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_model(repo, "unspecified", identity_config("unspecified"))
    with ServerProcess([repo]) as server:
        every = list(range(cuda_device_count()))
        assert groups(server, "unspecified") == [("KIND_GPU", 1, every)]
        log = server.log()
    assert "GPU 0: " in log and "compute capability" in log
