"""The GPUs this server may use: discovered once at start-up with NVIDIA's management library.

Triton asks the CUDA runtime for its devices and keeps those whose compute capability reaches
`--min-supported-compute-capability` (6.0 by default); model placement (`KIND_GPU`, `gpus: [..]`,
`KIND_AUTO`, a missing `instance_group`) only ever names those. Tritium asks NVML
(`nvidia-ml-py`), which needs only the driver: counting devices must not import a framework (torch
takes seconds to import and would hold a CUDA context in the server process for nothing).

NVML numbers every GPU of the machine and ignores `CUDA_VISIBLE_DEVICES`; the CUDA runtime, and so
every framework and `device_id` a backend sees, numbers only the visible ones, in the order the
variable lists them. `visible_nvml_indices` applies the variable the way the CUDA runtime does
(indices or `GPU-` UUID prefixes, the list ending at the first entry that names no device), so
device id N here is `cuda:N` in the backends. Without a driver (or without `nvidia-ml-py`) the
list is empty and the server is the CPU-only server it always was.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType

from .errors import TritonError

log = logging.getLogger("tritium.gpus")

# Triton's default --min-supported-compute-capability (TRITON_MIN_COMPUTE_CAPABILITY).
DEFAULT_MIN_COMPUTE_CAPABILITY = 6.0


@dataclass(frozen=True)
class GpuDevice:
    """One GPU as the server's processes see it."""

    device_id: int  # the CUDA ordinal: `cuda:<device_id>`, the `gpus: [..]` of a config
    nvml_index: int  # NVML's index of the same device (for metrics)
    name: str
    uuid: str
    pci_bus_id: str
    compute_capability: tuple[int, int]
    memory_total: int  # bytes

    @property
    def capability(self) -> float:
        major, minor = self.compute_capability
        return major + minor / 10


@dataclass(frozen=True)
class GpuInventory:
    """Every visible GPU, and which of them placement may use."""

    devices: tuple[GpuDevice, ...] = ()
    min_compute_capability: float = DEFAULT_MIN_COMPUTE_CAPABILITY
    driver_version: str = ""
    # --model-load-gpu-limit: device id -> the fraction of its memory in use above which no
    # further model instance is loaded onto it.
    load_limits: Mapping[int, float] = field(default_factory=dict)

    @property
    def supported(self) -> tuple[GpuDevice, ...]:
        """The devices at or above the minimum compute capability (Triton's supported GPUs)."""
        return tuple(d for d in self.devices if d.capability >= self.min_compute_capability)

    @property
    def supported_ids(self) -> tuple[int, ...]:
        return tuple(d.device_id for d in self.supported)

    def device(self, device_id: int) -> GpuDevice | None:
        for device in self.devices:
            if device.device_id == device_id:
                return device
        return None

    def check_load_limit(self, device_id: int) -> None:
        """Refuse to load onto a GPU whose memory in use is past its --model-load-gpu-limit,
        with Triton's error (UNAVAILABLE: the load may succeed once memory is freed)."""
        limit = self.load_limits.get(device_id)
        device = self.device(device_id)
        if limit is None or device is None:
            return
        used = memory_used(device)
        if used is not None and used > limit * device.memory_total:
            raise TritonError.unavailable(
                f"memory limit set for GPU {device_id} has exceeded, model loading is rejected.")


NO_GPUS = GpuInventory()


def visible_nvml_indices(
    visible: str | None, uuids: Sequence[str]
) -> list[int]:
    """The NVML indices the CUDA runtime exposes, in CUDA ordinal order, for a
    `CUDA_VISIBLE_DEVICES` value (`None`: the variable is unset, every device in order).

    As the CUDA runtime reads it: comma-separated entries, each an index or a UUID (a unique
    prefix of `GPU-...` will do); the list ends at the first entry that names no device, or names
    one already listed."""
    if visible is None:
        return list(range(len(uuids)))
    chosen: list[int] = []
    for raw in visible.split(","):
        entry = raw.strip()
        index: int | None = None
        if entry.lstrip("+").isdigit():
            number = int(entry)
            index = number if number < len(uuids) else None
        elif entry.upper().startswith("GPU-"):
            matches = [i for i, u in enumerate(uuids) if u.upper().startswith(entry.upper())]
            index = matches[0] if len(matches) == 1 else None
        if index is None or index in chosen:
            break
        chosen.append(index)
    return chosen


def discover(
    min_compute_capability: float | None = None,
    environ: Mapping[str, str] | None = None,
) -> GpuInventory:
    """Ask NVML for the GPUs this process may use; no driver (or no nvidia-ml-py) is no GPUs."""
    minimum = (DEFAULT_MIN_COMPUTE_CAPABILITY if min_compute_capability is None
               else min_compute_capability)
    env = os.environ if environ is None else environ
    nvml = import_nvml()
    if nvml is None:
        return GpuInventory(min_compute_capability=minimum)
    try:
        nvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, _DriverNotLoaded, ...
        log.debug("no NVIDIA driver: %s", exc)
        return GpuInventory(min_compute_capability=minimum)
    try:
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
        uuids = [_text(nvml.nvmlDeviceGetUUID(h)) for h in handles]
        devices = []
        for device_id, index in enumerate(
                visible_nvml_indices(env.get("CUDA_VISIBLE_DEVICES"), uuids)):
            handle = handles[index]
            major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
            devices.append(GpuDevice(
                device_id=device_id,
                nvml_index=index,
                name=_text(nvml.nvmlDeviceGetName(handle)),
                uuid=uuids[index],
                pci_bus_id=_text(nvml.nvmlDeviceGetPciInfo(handle).busId),
                compute_capability=(int(major), int(minor)),
                memory_total=int(nvml.nvmlDeviceGetMemoryInfo(handle).total),
            ))
        driver = _text(nvml.nvmlSystemGetDriverVersion())
    except Exception as exc:
        log.warning("NVIDIA management library failed while listing GPUs (%s); "
                    "serving on the CPU only", exc)
        return GpuInventory(min_compute_capability=minimum)
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:
            pass
    return GpuInventory(tuple(devices), minimum, driver)


def memory_used(device: GpuDevice) -> int | None:
    """Bytes in use on `device` now, as NVML counts them (every process's), or None when NVML
    cannot tell."""
    nvml = import_nvml()
    if nvml is None:
        return None
    try:
        nvml.nvmlInit()
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(device.nvml_index)
            return int(nvml.nvmlDeviceGetMemoryInfo(handle).used)
        finally:
            nvml.nvmlShutdown()
    except Exception as exc:
        log.warning("cannot read the memory in use on GPU %d: %s", device.device_id, exc)
        return None


def log_inventory(inventory: GpuInventory) -> None:
    """The start-up lines a user reads to see which GPUs will be used."""
    for device in inventory.devices:
        major, minor = device.compute_capability
        if device in inventory.supported:
            log.info("GPU %d: %s (compute capability %d.%d, %d MiB, %s)", device.device_id,
                     device.name, major, minor, device.memory_total >> 20, device.uuid)
        else:
            log.warning(
                "GPU %d: %s has compute capability %d.%d, below "
                "--min-supported-compute-capability %.1f: no model instance is placed on it",
                device.device_id, device.name, major, minor, inventory.min_compute_capability)


def import_nvml() -> ModuleType | None:
    """nvidia-ml-py's `pynvml`, or None where it is not installed."""
    try:
        import pynvml  # nvidia-ml-py
    except ImportError:
        return None
    return pynvml


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


__all__ = [
    "DEFAULT_MIN_COMPUTE_CAPABILITY",
    "NO_GPUS",
    "GpuDevice",
    "GpuInventory",
    "discover",
    "import_nvml",
    "log_inventory",
    "memory_used",
    "visible_nvml_indices",
]
