"""A stand-in for nvidia-ml-py's `pynvml` that answers what a real GPU answered.

Tests put this folder first on a server process's PYTHONPATH and name a probe file (NVML's
answers recorded on a real machine, tests/support/data/gpu/h200-probe.json, or one a test
writes with more devices) in TRITIUM_FAKE_NVML; without it `nvmlInit` fails as it does on a
machine without the NVIDIA driver. Only the calls Tritium makes are here: a new call fails
loudly (AttributeError) rather than answering something no GPU said.

The figures that move on a real GPU (memory used, utilization, power, energy) are read again
from the probe file whenever it changes, so a test can rewrite it while the server runs; a
device without one of them in its probe answers NOT_SUPPORTED, as boards without that sensor do.
"""

from __future__ import annotations

import json
import os
from types import SimpleNamespace
from typing import Any

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_DRIVER_NOT_LOADED = 9


class NVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return {NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
                NVML_ERROR_UNINITIALIZED: "Uninitialized",
                NVML_ERROR_NOT_SUPPORTED: "Not Supported"}.get(self.value, "Unknown Error")


_probe: dict[str, Any] | None = None
_probe_path = ""
_probe_stamp: tuple[int, int, int] | None = None


def _devices() -> list[dict[str, Any]]:
    if _probe is None:
        raise NVMLError(NVML_ERROR_UNINITIALIZED)
    return _probe["nvml_devices"]


def nvmlInit() -> None:
    global _probe, _probe_path, _probe_stamp
    path = os.environ.get("TRITIUM_FAKE_NVML")
    if not path:
        raise NVMLError(NVML_ERROR_DRIVER_NOT_LOADED)
    _probe_stamp = _stamp(path)
    with open(path) as f:
        _probe = json.load(f)
    _probe_path = path


def _stamp(path: str) -> tuple[int, int, int]:
    status = os.stat(path)
    return status.st_ino, status.st_mtime_ns, status.st_size


def _reading(handle: dict[str, Any], key: str) -> Any:
    """A figure that moves: the probe's latest, NOT_SUPPORTED where the probe has none."""
    global _probe_stamp
    stamp = _stamp(_probe_path)
    if stamp != _probe_stamp:
        with open(_probe_path) as f:
            latest = json.load(f)["nvml_devices"]
        for device, new in zip(_devices(), latest, strict=True):
            device.clear()
            device.update(new)  # handles given out stay valid
        _probe_stamp = stamp
    if key not in handle:
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
    return handle[key]


def nvmlShutdown() -> None:
    pass


def nvmlSystemGetDriverVersion() -> str:
    _devices()
    assert _probe is not None
    return _probe["nvml_driver"]


def nvmlSystemGetCudaDriverVersion() -> int:
    _devices()
    assert _probe is not None
    return _probe["nvml_cuda_driver_version"]


def nvmlDeviceGetCount() -> int:
    return len(_devices())


def nvmlDeviceGetHandleByIndex(index: int) -> dict[str, Any]:
    return _devices()[index]


def nvmlDeviceGetName(handle: dict[str, Any]) -> str:
    return handle["name"]


def nvmlDeviceGetUUID(handle: dict[str, Any]) -> str:
    return handle["uuid"]


def nvmlDeviceGetIndex(handle: dict[str, Any]) -> int:
    return handle["index"]


def nvmlDeviceGetPciInfo(handle: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(busId=handle["pci_bus_id"])


def nvmlDeviceGetCudaComputeCapability(handle: dict[str, Any]) -> tuple[int, int]:
    major, minor = handle["compute_capability"]
    return major, minor


def nvmlDeviceGetMemoryInfo(handle: dict[str, Any]) -> SimpleNamespace:
    total, used = handle["memory_total"], _reading(handle, "memory_used")
    return SimpleNamespace(total=total, used=used, free=total - used)


def nvmlDeviceGetUtilizationRates(handle: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(gpu=_reading(handle, "utilization_gpu_pct"), memory=0)


def nvmlDeviceGetPowerUsage(handle: dict[str, Any]) -> int:
    return _reading(handle, "power_usage_mw")


def nvmlDeviceGetEnforcedPowerLimit(handle: dict[str, Any]) -> int:
    return _reading(handle, "power_limit_mw")


def nvmlDeviceGetPowerManagementLimit(handle: dict[str, Any]) -> int:
    return _reading(handle, "power_limit_mw")


def nvmlDeviceGetTotalEnergyConsumption(handle: dict[str, Any]) -> int:
    return _reading(handle, "energy_mj")
