"""Triton's CPU metrics (nv_cpu_utilization, nv_cpu_memory_total_bytes/used_bytes).

Counterpart: Triton's Metrics::PollCpuMetrics, which reads /proc/stat and /proc/meminfo once
every --metrics-interval-ms: utilization is the share of non-idle time between two readings
(0.0 - 1.0), used memory is MemTotal - MemAvailable. A scrape reads the last figures, as in
Triton, so scraping costs no file reads. The readings run on a thread of their own, as the GPU
metrics' do, so that the metrics port and the in-process API's `Server.metrics()` (which has no
event loop) both keep them current.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

log = logging.getLogger("tritium.metrics")

_STAT = Path("/proc/stat")
_MEMINFO = Path("/proc/meminfo")


def _cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies over every CPU since boot."""
    fields = _STAT.read_text().split("\n", 1)[0].split()[1:]
    values = [int(v) for v in fields]
    # user nice system idle iowait irq softirq steal (guest time is already in user/nice).
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    total = sum(values[:8])
    return total - idle, total


def _memory() -> tuple[int, int]:
    """(total, used) bytes."""
    info: dict[str, int] = {}
    for line in _MEMINFO.read_text().splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts:
            info[key] = int(parts[0]) * 1024
    total = info.get("MemTotal", 0)
    return total, total - info.get("MemAvailable", info.get("MemFree", 0))


class CpuMetrics:
    """The latest CPU figures, refreshed every `interval_s` on a daemon thread."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.utilization = 0.0
        self.memory_total = 0
        self.memory_used = 0
        self._last: tuple[int, int] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.available = _STAT.exists() and _MEMINFO.exists()

    def poll(self) -> None:
        """Read the figures once (the utilization covers the time since the last poll)."""
        try:
            busy, total = _cpu_times()
            if self._last is not None and total > self._last[1]:
                self.utilization = (busy - self._last[0]) / (total - self._last[1])
            self._last = (busy, total)
            self.memory_total, self.memory_used = _memory()
        except (OSError, ValueError, IndexError) as exc:
            log.debug("reading CPU metrics failed: %s", exc)

    def start(self) -> None:
        if self.available:
            log.info("Collecting CPU metrics")
            self.poll()
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="tritium-cpu-metrics",
                                            daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.poll()

    def stop(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stop.set()
            thread.join()


__all__ = ["CpuMetrics"]
