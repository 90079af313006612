"""The response cache (`--cache-config local,size=N`, `response_cache { enable: true }`).

Triton's "local" cache: one server-wide LRU of final responses keyed by a hash of the request,
holding at most `size` bytes, each response counted as the entry Triton packs it into (its
outputs' names, datatypes, shapes and data, with their lengths); a response larger than the
whole cache is not kept, and logged as Triton's scheduler logs the refused insertion. A model
that enables it (never a decoupled or sequence model: the configuration check refuses those)
answers a request whose key is cached without queueing it, and inserts every successful
response it computes.

The key is stricter than Triton's, which hashes only the model, version, input names and input
bytes: here input datatypes and shapes, the requested outputs and the request's own parameters
count too, so a request is never answered with a response computed for a different one.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from time import perf_counter_ns
from typing import TYPE_CHECKING

import numpy as np

from .errors import TritonError
from .request import RESPONSE_COMPLETE_FINAL, InferenceRequest, InferenceResponse, ResponseSender
from .tensor import Tensor, serialize_bytes

if TYPE_CHECKING:
    from .statistics import ModelStatistics

log = logging.getLogger("tritium.cache")


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


class ResponseCache:
    """A thread-safe LRU of responses within a byte budget."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._entries: OrderedDict[bytes, tuple[list[Tensor], int]] = OrderedDict()
        self._used = 0
        self._lookups = self._hits = self._misses = self._evictions = 0
        self._lookup_ns = self._insertion_ns = 0

    @classmethod
    def from_config(cls, config: dict[str, dict[str, str]]) -> ResponseCache | None:
        """The cache `--cache-config` asks for (None without one); only 'local' exists here.
        Several caches are refused before any is looked at, as Triton's server does."""
        if not config:
            return None
        if len(config) > 1:
            raise TritonError.invalid_arg(
                "found multiple cache configurations, but only a single cache is currently "
                "supported"
            )
        ((name, settings),) = config.items()
        if name != "local":
            raise TritonError.invalid_arg(
                f"unable to find cache '{name}': Tritium provides only the 'local' cache"
            )
        size = settings.get("size")
        try:
            return cls(int(size or ""))
        except ValueError:
            raise TritonError.invalid_arg(
                f"cache 'local' size must be a number of bytes, got '{size}'"
            ) from None

    def lookup(self, key: bytes) -> list[Tensor] | None:
        start = perf_counter_ns()
        with self._lock:
            entry = self._entries.get(key)
            self._lookups += 1
            if entry is None:
                self._misses += 1
            else:
                self._hits += 1
                self._entries.move_to_end(key)
            self._lookup_ns += perf_counter_ns() - start
        return entry[0] if entry is not None else None

    def insert(self, key: bytes, outputs: list[Tensor]) -> None:
        start = perf_counter_ns()
        # Own copies: a backend may hand out views of buffers it reuses (shared memory).
        stored = [Tensor(t.name, t.datatype, t.shape, np.array(t.data, copy=True))
                  for t in outputs]
        size = _entry_size(stored)
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
            self._insertion_ns += perf_counter_ns() - start

    def snapshot(self) -> CacheSnapshot:
        with self._lock:
            return CacheSnapshot(
                entries=len(self._entries), lookups=self._lookups, hits=self._hits,
                misses=self._misses, evictions=self._evictions, lookup_ns=self._lookup_ns,
                insertion_ns=self._insertion_ns,
                utilization=self._used / self.size if self.size else 0.0,
            )


class ModelResponseCache:
    """One model version's use of the server's cache: answer hits, insert what is computed,
    and count both in the model's statistics."""

    def __init__(self, cache: ResponseCache, name: str, version: str,
                 outputs: list[str], statistics: ModelStatistics) -> None:
        self._cache = cache
        self._prefix = f"{name}\0{version}\0".encode()
        # No requested output means every output: the same request as naming them all.
        self._all_outputs = sorted(outputs)
        self._statistics = statistics
        statistics.cache_enabled = True

    def serve(self, request: InferenceRequest) -> bool:
        """Answer `request` from the cache (True), or arrange for its response to be cached."""
        start = perf_counter_ns()
        key = self._key(request)
        outputs = self._cache.lookup(key)
        sender = request.response_sender
        assert sender is not None
        if outputs is not None:
            request.cache_hit_start_ns = start
            request.cache_hit_ns = perf_counter_ns() - start
            sender.send(InferenceResponse(outputs=list(outputs)), RESPONSE_COMPLETE_FINAL)
            return True
        lookup_ns = perf_counter_ns() - start

        def insert_then_send(response: InferenceResponse | None, flags: int) -> None:
            if flags & RESPONSE_COMPLETE_FINAL and response is not None \
                    and response.error is None:
                began = perf_counter_ns()
                self._cache.insert(key, response.outputs)
                self._statistics.record_cache_miss(lookup_ns + perf_counter_ns() - began)
            sender.send(response, flags)

        request.response_sender = ResponseSender(insert_then_send)
        return False

    def _key(self, request: InferenceRequest) -> bytes:
        digest = hashlib.blake2b(self._prefix, digest_size=16)
        for name in sorted(request.inputs):
            tensor = request.inputs[name]
            digest.update(f"{name}\0{tensor.datatype}\0{tensor.shape}\0".encode())
            if tensor.datatype == "BYTES":
                digest.update(serialize_bytes(tensor.data))
            else:
                digest.update(np.ascontiguousarray(tensor.data).data)
        outputs = sorted(request.requested_output_names) or self._all_outputs
        digest.update(repr(outputs).encode())
        digest.update(repr(sorted(request.parameters.items())).encode())
        return digest.digest()


def _entry_size(outputs: list[Tensor]) -> int:
    """The bytes of the entry Triton's cache packs a response into (core cache_entry.cc): the
    output count (4), then per output its packed length (8), name, datatype and shape, each
    after a 4-byte length, and its data after an 8-byte one."""
    size = 4
    for tensor in outputs:
        size += (8 + 4 + len(tensor.name.encode()) + 4 + len(tensor.datatype)
                 + 4 + 8 * len(tensor.shape) + 8 + _byte_size(tensor))
    return size


def _byte_size(tensor: Tensor) -> int:
    if tensor.datatype == "BYTES":
        return len(serialize_bytes(tensor.data))
    return int(tensor.data.nbytes)
