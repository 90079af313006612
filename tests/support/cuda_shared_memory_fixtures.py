"""What the CUDA shared-memory tests share: servers without GPUs and with fake ones, and client
regions in fake device memory.

The fake GPU server answers NVML from the H200 probe (support.gpu) and runs the stand-in CUDA
binding of support/fake_cuda, whose "device memory" is a /dev/shm object: CPU-only tests drive
registration, inference and unregistration through the real frontends and the server's real
CUDA code paths. The GPU tests (marked `gpu`) do the same with tritonclient's
cuda_shared_memory and real device memory.
"""

from __future__ import annotations

import base64
import importlib.util
import os
from pathlib import Path

import pytest

from support import SUPPORT
from support.gpu import H200_PROBE, fake_gpu_env, write_probe
from support.server_process import ServerProcess
from support.shared_memory_fixtures import Region

FAKE_CUDA = SUPPORT / "fake_cuda"


def _fake_handles():
    """The fake binding's handle format, loaded without importing it as `cuda` here (a GPU
    test process imports the real `cuda.bindings`)."""
    spec = importlib.util.spec_from_file_location(
        "fake_cuda_handles", FAKE_CUDA / "cuda" / "bindings" / "__init__.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fake_handle = _fake_handles().fake_handle


def fake_cuda_env(probe: Path = H200_PROBE) -> dict[str, str]:
    """A ServerProcess environment with the NVML of `probe` and the stand-in CUDA binding."""
    env = fake_gpu_env(probe)
    env["PYTHONPATH"] = os.pathsep.join([str(FAKE_CUDA), env["PYTHONPATH"]])
    return env


@pytest.fixture(scope="module")
def no_gpu_server(standard_repo: Path, tmp_path_factory: pytest.TempPathFactory):
    """A server whose NVML lists no GPU (whatever the machine has)."""
    probe = write_probe(tmp_path_factory.mktemp("probe") / "none.json", [])
    with ServerProcess([standard_repo], "--allow-client-shm=true",
                       env=fake_gpu_env(probe)) as process:
        yield process


@pytest.fixture(scope="module")
def fake_gpu_server(standard_repo: Path):
    """A server with one (fake) GPU, device id 0, and the stand-in CUDA binding."""
    with ServerProcess([standard_repo], "--allow-client-shm=true",
                       env=fake_cuda_env()) as process:
        yield process


class DeviceRegion(Region):
    """A client allocation in fake device memory: a /dev/shm object and its fake IPC handle."""

    @property
    def raw_handle(self) -> bytes:
        """What tritonclient's cuda_shared_memory.get_raw_handle gives: the handle, base64."""
        return base64.b64encode(fake_handle(self.key))


@pytest.fixture
def device_regions():
    made: list[DeviceRegion] = []

    def make(byte_size: int) -> DeviceRegion:
        made.append(DeviceRegion(byte_size))
        return made[-1]

    yield make
    for region in made:
        region.destroy()
