"""Server CPU per inference and idle stub memory, read from /proc.

Throughput moves with whatever else the machine runs; the CPU a server spends per request
(utime + stime of the server process and every process under it: Tritium's or Triton's stubs)
moves far less, so the python suite prints it beside infer/s. Linux only (/proc).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

_TICKS = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat") as f:
        text = f.read()
    # The command name may hold spaces and parentheses: fields start after the last ')'.
    return text[text.rindex(")") + 2 :].split()


def descendants(pid: int) -> list[int]:
    """`pid` and every process under it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            parent = int(_stat_fields(int(entry))[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(entry))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(children.get(current, ()))
    return tree


def cpu_seconds(pid: int) -> float:
    """utime + stime of `pid` and its descendants alive now."""
    total = 0
    for member in descendants(pid):
        try:
            fields = _stat_fields(member)
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / _TICKS


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


@dataclass
class StubMemory:
    count: int
    max_rss_mib: float

    def __str__(self) -> str:
        return f"{self.max_rss_mib:.1f} MiB ({self.count} stubs)" if self.count else "n/a"


def stub_memory(pid: int) -> StubMemory:
    """The server's child processes (its stubs, idle when measured): how many, largest RSS."""
    stubs = [member for member in descendants(pid) if member != pid]
    sizes = []
    for member in stubs:
        try:
            sizes.append(rss_kib(member))
        except OSError:
            continue
    return StubMemory(len(sizes), max(sizes, default=0) / 1024)


class CpuMeter:
    """CPU of a server tree across one measured run."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._start = 0.0

    def __enter__(self) -> CpuMeter:
        self._start = cpu_seconds(self.pid)
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = cpu_seconds(self.pid) - self._start

    def per_request_us(self, requests: int) -> float:
        return self.seconds * 1e6 / requests if requests else float("nan")
