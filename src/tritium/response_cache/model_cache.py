"""A model's use of the server's response cache (`response_cache { enable: true }`).

A model that enables it (never a decoupled or sequence model: the configuration check refuses
those) answers a request whose key is cached without queueing it, and inserts every successful
response it computes.

The key is stricter than Triton's, which hashes only the model, version, input names and input
bytes: here input datatypes and shapes, the requested outputs and the request's own parameters
count too, so a request is never answered with a response computed for a different one. It is
the same on every server (a 16-byte BLAKE2b digest), so servers sharing one redis share hits.
"""

from __future__ import annotations

import hashlib
from time import perf_counter_ns
from typing import TYPE_CHECKING

import numpy as np

from ..request import RESPONSE_COMPLETE_FINAL, InferenceRequest, InferenceResponse, ResponseSender
from ..tensor import serialize_bytes
from .cache import ResponseCache

if TYPE_CHECKING:
    from ..statistics import ModelStatistics

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


