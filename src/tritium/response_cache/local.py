"""Triton's "local" cache (`--cache-config local,size=N`): one server-wide LRU of final
responses within `size` bytes.

Each response counts as the entry Triton packs it into (`entry.entry_size`: its outputs'
names, datatypes, shapes and data, with their lengths); a response larger than the whole cache
is not kept, and logged as Triton's scheduler logs the refused insertion.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict

import numpy as np

from ..errors import TritonError
from ..tensor import Tensor
from .cache import Occupancy, ResponseCache
from .entry import entry_size

log = logging.getLogger("tritium.cache")


class LocalCache(ResponseCache):
    """A thread-safe LRU of responses within a byte budget."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size
        self._lock = threading.Lock()
        self._entries: OrderedDict[bytes, tuple[list[Tensor], int]] = OrderedDict()
        self._used = 0
        self._evictions = 0

    @classmethod
    def from_settings(cls, settings: dict[str, str]) -> LocalCache:
        size = settings.get("size")
        try:
            return cls(int(size or ""))
        except ValueError:
            raise TritonError.invalid_arg(
                f"cache 'local' size must be a number of bytes, got '{size}'"
            ) from None

    def _lookup(self, key: bytes) -> list[Tensor] | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
        return list(entry[0]) if entry is not None else None

    def _insert(self, key: bytes, outputs: list[Tensor]) -> None:
        # Own copies: a backend may hand out views of buffers it reuses (shared memory).
        stored = [Tensor(t.name, t.datatype, t.shape, np.array(t.data, copy=True))
                  for t in outputs]
        size = entry_size(stored)
        with self._lock:
            if size > self.size:
                # Triton prints its key, a size_t hash, in decimal.
                log.error("Failed to insert key [%d] into response cache: Requested byte_size: "
                          "%d is greater than total cache size: %d",
                          int.from_bytes(key[:8], "little"), size, self.size)
            elif key not in self._entries:
                while self._used + size > self.size:
                    _, (_, evicted) = self._entries.popitem(last=False)
                    self._used -= evicted
                    self._evictions += 1
                self._entries[key] = (stored, size)
                self._used += size

    def _occupancy(self) -> Occupancy:
        with self._lock:
            return Occupancy(entries=len(self._entries), evictions=self._evictions,
                             utilization=self._used / self.size if self.size else 0.0)
