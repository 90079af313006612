"""Latency summaries (`--metrics-config summary_latencies=true`): Triton's per-model Prometheus
summaries of request, queue and compute durations, with quantiles over the last minute.

Triton's summaries (prometheus-cpp, max age 60 s) estimate each quantile within the error its
`summary_quantiles` pair gives; these keep the observations of the last 60 s (the newest
`MAX_KEPT` of them per duration) and compute each quantile exactly from them, which meets any
error. `_sum` and `_count` cover every observation since the model loaded.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import dataclass

# Triton's default quantiles, {quantile: allowed error}.
DEFAULT_QUANTILES = ((0.5, 0.05), (0.9, 0.01), (0.95, 0.001), (0.99, 0.001), (0.999, 0.001))
MAX_AGE_S = 60.0
MAX_KEPT = 10_000

# The durations summarized: the request's (with cache hits), its queueing, the three compute
# phases (not for cache hits), and a cached model's hits and misses.
KINDS = ("request", "queue", "compute_input", "compute_infer", "compute_output", "cache_hit",
         "cache_miss")


def parse_quantiles(text: str) -> tuple[tuple[float, float], ...]:
    """`summary_quantiles` as tritonserver reads it: `<quantile>:<error>` pairs separated by
    commas; a pair that does not parse is skipped (Triton logs and skips it), and none left
    means the defaults."""
    pairs = []
    for item in text.split(","):
        quantile, colon, error = item.partition(":")
        if not colon:
            continue
        try:
            pairs.append((_leading_float(quantile), _leading_float(error)))
        except ValueError:
            continue
    return tuple(pairs) or DEFAULT_QUANTILES


def _leading_float(text: str) -> float:
    """The number a text starts with, as C++'s std::stod reads it ("0.0.1" is 0.0)."""
    text = text.strip()
    for end in range(len(text), 0, -1):
        try:
            return float(text[:end])
        except ValueError:
            continue
    raise ValueError(text)


@dataclass(frozen=True)
class SummarySnapshot:
    count: int
    sum_us: float
    quantiles: tuple[tuple[float, float], ...]  # (quantile, value in us; NaN with no data)


class _Window:
    __slots__ = ("count", "recent", "total_us")

    def __init__(self) -> None:
        self.recent: deque[tuple[float, float]] = deque(maxlen=MAX_KEPT)
        self.count = 0
        self.total_us = 0.0


class LatencySummaries:
    """One model version's summaries; `observe` is called for every request (cheap: one
    append under a lock), the quantiles are computed when /metrics is read."""

    def __init__(self, quantiles: tuple[tuple[float, float], ...] = DEFAULT_QUANTILES) -> None:
        self.quantiles = tuple(q for q, _ in quantiles)
        self._windows = {kind: _Window() for kind in KINDS}
        self._lock = threading.Lock()

    def observe(self, **durations_ns: int) -> None:
        """Durations (ns) of one request, by kind (`request=..., queue=...`)."""
        now = time.monotonic()
        with self._lock:
            for kind, ns in durations_ns.items():
                window = self._windows[kind]
                us = ns / 1000.0
                window.recent.append((now, us))
                window.count += 1
                window.total_us += us

    def snapshot(self, kind: str) -> SummarySnapshot:
        cutoff = time.monotonic() - MAX_AGE_S
        with self._lock:
            window = self._windows[kind]
            while window.recent and window.recent[0][0] < cutoff:
                window.recent.popleft()
            values = sorted(us for _, us in window.recent)
            count, total = window.count, window.total_us
        return SummarySnapshot(count, total, tuple(
            (q, _quantile(values, q)) for q in self.quantiles))


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    index = min(max(math.ceil(q * len(values)) - 1, 0), len(values) - 1)
    return values[index]
