"""The response cache's interface: what a model asks of the server-wide cache (`lookup`,
`insert`) and what the nv_cache_* gauges read of it (`snapshot`).

Lookups, hits, misses and their durations are counted here, alike for every cache; what the
cache holds (entries, utilization, evictions) only the cache itself can say.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from time import perf_counter_ns

from ..tensor import Tensor


@dataclass
class CacheSnapshot:
    """The server-wide figures behind Triton's nv_cache_* gauges."""

    entries: int
    lookups: int
    hits: int
    misses: int
    evictions: int
    lookup_ns: int
    insertion_ns: int
    utilization: float


@dataclass
class Occupancy:
    """What a cache holds, as far as it knows."""

    entries: int = 0
    evictions: int = 0
    utilization: float = 0.0


class ResponseCache(ABC):
    """A thread-safe store of final responses by request key (`ModelResponseCache` makes the
    keys). Called from the frontends' event loop (lookups) and the instances' threads
    (inserts)."""

    def __init__(self) -> None:
        self._counts_lock = threading.Lock()
        self._lookups = self._hits = self._misses = 0
        self._lookup_ns = self._insertion_ns = 0

    def lookup(self, key: bytes) -> list[Tensor] | None:
        """The outputs cached under `key`, or None (a miss)."""
        start = perf_counter_ns()
        outputs = self._lookup(key)
        elapsed = perf_counter_ns() - start
        with self._counts_lock:
            self._lookups += 1
            if outputs is None:
                self._misses += 1
            else:
                self._hits += 1
            self._lookup_ns += elapsed
        return outputs

    def insert(self, key: bytes, outputs: list[Tensor]) -> None:
        """Keep `outputs` under `key`; a cache that cannot says so in the log, never to the
        request (its response is sent all the same)."""
        start = perf_counter_ns()
        self._insert(key, outputs)
        elapsed = perf_counter_ns() - start
        with self._counts_lock:
            self._insertion_ns += elapsed

    def snapshot(self) -> CacheSnapshot:
        held = self._occupancy()
        with self._counts_lock:
            return CacheSnapshot(
                entries=held.entries, lookups=self._lookups, hits=self._hits,
                misses=self._misses, evictions=held.evictions, lookup_ns=self._lookup_ns,
                insertion_ns=self._insertion_ns, utilization=held.utilization,
            )

    @abstractmethod
    def _lookup(self, key: bytes) -> list[Tensor] | None: ...

    @abstractmethod
    def _insert(self, key: bytes, outputs: list[Tensor]) -> None: ...

    @abstractmethod
    def _occupancy(self) -> Occupancy: ...
