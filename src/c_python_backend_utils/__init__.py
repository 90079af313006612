"""``c_python_backend_utils``: the module Triton's Python-backend stub exposes to models.

In Triton this is the stub's pybind11 module, and ``triton_python_backend_utils`` re-exports its
classes. Some models import it directly, e.g. to check how much of the stub's shared memory is
left (``c_python_backend_utils.shared_memory.free_memory()``) or for the classes themselves.
Here the classes are Tritium's ``triton_python_backend_utils`` ones, and ``shared_memory``
reports the stub's output region (where the model's output tensors are written), which the
stub attaches when it starts.
"""

from __future__ import annotations

from typing import Any

from triton_python_backend_utils import (
    TRITONSERVER_MEMORY_CPU,
    TRITONSERVER_MEMORY_GPU,
    TRITONSERVER_REQUEST_FLAG_SEQUENCE_END,
    TRITONSERVER_REQUEST_FLAG_SEQUENCE_START,
    TRITONSERVER_REQUEST_RELEASE_ALL,
    TRITONSERVER_REQUEST_RELEASE_RESCHEDULE,
    TRITONSERVER_RESPONSE_COMPLETE_FINAL,
    InferenceRequest,
    InferenceResponse,
    InferenceResponseSender,
    InferenceTrace,
    Logger,
    Metric,
    MetricFamily,
    PreferredMemory,
    Tensor,
    TritonError,
    TritonModelException,
)


class SharedMemory:
    """The stub's shared memory, as Triton's SharedMemoryManager reports it to models."""

    def __init__(self) -> None:
        self._ring: Any = None

    def _attach(self, ring: Any) -> None:
        """The stub's output region (a `tritium.builtin_backends.python.wire.shm_ring.Ring`)."""
        self._ring = ring

    def free_memory(self) -> int:
        """Bytes of the region not holding a tensor the server has yet to read."""
        ring = self._ring
        if ring is None:
            return 0
        return ring.capacity - (ring._head - ring._consumed[0])


shared_memory = SharedMemory()

__all__ = [
    "TRITONSERVER_MEMORY_CPU", "TRITONSERVER_MEMORY_GPU", "TRITONSERVER_REQUEST_FLAG_SEQUENCE_END",
    "TRITONSERVER_REQUEST_FLAG_SEQUENCE_START", "TRITONSERVER_REQUEST_RELEASE_ALL",
    "TRITONSERVER_REQUEST_RELEASE_RESCHEDULE", "TRITONSERVER_RESPONSE_COMPLETE_FINAL",
    "InferenceRequest", "InferenceResponse", "InferenceResponseSender", "InferenceTrace",
    "Logger", "Metric", "MetricFamily", "PreferredMemory", "SharedMemory", "Tensor",
    "TritonError", "TritonModelException", "shared_memory",
]
