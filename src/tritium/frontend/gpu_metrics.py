"""Triton's GPU metrics (nv_gpu_utilization, nv_gpu_memory_*, nv_gpu_power_*,
nv_energy_consumption), one series per GPU labelled with its `gpu_uuid`.

Counterpart: Triton's Metrics::InitializeDcgmMetrics and PollDcgmMetrics. Triton reads DCGM;
Tritium asks NVML (`nvidia-ml-py`) directly for the same figures DCGM takes from it: utilization
(percent, shown as 0.0 - 1.0), framebuffer memory total and used (bytes), power usage and the
power management limit (milliwatts, shown in watts), and total energy (millijoules since the
driver loaded, shown in joules consumed since the server started). NVML calls can take
milliseconds, so they run on a background thread every --metrics-interval-ms, never on the
event loop; a scrape reads the last figures. A device that cannot answer one of them (NVML's
NOT_SUPPORTED, typically energy on older boards) leaves that series out; the scrape never fails.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from ..gpus import GpuDevice, import_nvml

log = logging.getLogger("tritium.metrics")

# (name, help, type), in the order Triton registers them.
FAMILIES: tuple[tuple[str, str, str], ...] = (
    ("nv_gpu_utilization", "GPU utilization rate [0.0 - 1.0)", "gauge"),
    ("nv_gpu_memory_total_bytes", "GPU total memory, in bytes", "gauge"),
    ("nv_gpu_memory_used_bytes", "GPU used memory, in bytes", "gauge"),
    ("nv_gpu_power_usage", "GPU power usage in watts", "gauge"),
    ("nv_gpu_power_limit", "GPU power management limit in watts", "gauge"),
    ("nv_energy_consumption", "GPU energy consumption in joules since the Triton Server started",
     "counter"),
)

_PER_UNIT = 1000  # milliwatts per watt, millijoules per joule


@dataclass
class _Device:
    """One GPU being watched: its NVML handle, its energy baseline, the warnings given."""

    device: GpuDevice
    handle: Any
    last_energy_mj: int | None = None  # None until energy is first read
    energy_j: float = 0.0
    warned: set[str] = field(default_factory=set)  # readers that failed (warned once)


def _utilization(nvml: ModuleType, watched: _Device) -> dict[str, float]:
    return {"nv_gpu_utilization": nvml.nvmlDeviceGetUtilizationRates(watched.handle).gpu / 100}


def _memory(nvml: ModuleType, watched: _Device) -> dict[str, float]:
    memory = nvml.nvmlDeviceGetMemoryInfo(watched.handle)
    return {"nv_gpu_memory_total_bytes": int(memory.total),
            "nv_gpu_memory_used_bytes": int(memory.used)}


def _power_usage(nvml: ModuleType, watched: _Device) -> dict[str, float]:
    return {"nv_gpu_power_usage": nvml.nvmlDeviceGetPowerUsage(watched.handle) / _PER_UNIT}


def _power_limit(nvml: ModuleType, watched: _Device) -> dict[str, float]:
    # DCGM's POWER_MGMT_LIMIT, which Triton reads, is NVML's power management limit.
    limit = nvml.nvmlDeviceGetPowerManagementLimit(watched.handle)
    return {"nv_gpu_power_limit": limit / _PER_UNIT}


def _energy(nvml: ModuleType, watched: _Device) -> dict[str, float]:
    """Joules since the first reading; a reading below the last (the driver reloaded) adds
    nothing, as a Prometheus counter only grows."""
    now = int(nvml.nvmlDeviceGetTotalEnergyConsumption(watched.handle))
    if watched.last_energy_mj is not None and now > watched.last_energy_mj:
        watched.energy_j += (now - watched.last_energy_mj) / _PER_UNIT
    watched.last_energy_mj = now
    return {"nv_energy_consumption": watched.energy_j}


_READERS: tuple[Callable[[ModuleType, _Device], dict[str, float]], ...] = (
    _utilization, _memory, _power_usage, _power_limit, _energy)


class GpuMetrics:
    """The latest figures of each GPU, refreshed every `interval_s` on a thread of its own."""

    def __init__(self, devices: Sequence[GpuDevice], interval_s: float) -> None:
        self.interval_s = interval_s
        self._wanted = tuple(devices)
        self._nvml: ModuleType | None = None
        self._devices: list[_Device] = []
        # gpu_uuid -> {family name: value}; replaced whole by each poll, so a scrape reads one
        # consistent set without a lock.
        self.readings: dict[str, dict[str, float]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def uuid_of(self, device_id: int) -> str | None:
        """The UUID of GPU `device_id` if its metrics are collected (Triton labels a GPU
        instance's inference metrics only with a GPU its metrics know)."""
        for device in self._wanted:
            if device.device_id == device_id:
                return device.uuid
        return None

    def start(self) -> None:
        """Open NVML, log each GPU as Triton does, read once, then keep reading (nothing to
        do without GPUs)."""
        if not self._wanted:
            return
        nvml = import_nvml()
        if nvml is None:
            log.warning("nvidia-ml-py is not installed, GPU metrics will not be available")
            return
        try:
            nvml.nvmlInit()
        except Exception as exc:  # NVMLError_DriverNotLoaded, _LibraryNotFound, ...
            log.warning("error initializing NVML, GPU metrics will not be available: %s", exc)
            return
        self._nvml = nvml
        for device in self._wanted:
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(device.nvml_index)
            except nvml.NVMLError as exc:
                log.warning("GPU metrics will not be available for GPU %d: %s",
                            device.device_id, exc)
                continue
            log.info("Collecting metrics for GPU %d: %s", device.device_id, device.name)
            self._devices.append(_Device(device, handle))
        self.poll()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="tritium-gpu-metrics",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.poll()
            except Exception:  # the thread must outlive any one bad reading
                log.exception("polling GPU metrics failed")

    def poll(self) -> None:
        """Read every figure of every GPU once; a figure NVML cannot give is left out."""
        nvml = self._nvml
        assert nvml is not None
        readings: dict[str, dict[str, float]] = {}
        for watched in self._devices:
            figures: dict[str, float] = {}
            for read in _READERS:
                try:
                    figures.update(read(nvml, watched))
                except nvml.NVMLError as exc:
                    if read.__name__ not in watched.warned:
                        watched.warned.add(read.__name__)
                        log.warning("Unable to read %s for GPU %d: %s; left out of the "
                                    "metrics", read.__name__.strip("_").replace("_", " "),
                                    watched.device.device_id, exc)
            readings[watched.device.uuid] = figures
        self.readings = readings

    def stop(self) -> None:
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stop.set()
        thread.join()
        assert self._nvml is not None
        try:
            self._nvml.nvmlShutdown()
        except Exception as exc:
            log.debug("NVML shutdown failed: %s", exc)


__all__ = ["FAMILIES", "GpuMetrics"]
