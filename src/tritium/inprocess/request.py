"""InferenceRequest: Triton's in-process API request (a dataclass the caller fills).

It is turned into the core's `tritium.request.InferenceRequest` when sent: inputs become core
tensors (numpy views, no copy), parameters are checked to be str/int/float/bool as Triton's
binding checks them, and the output memory settings become the request's ResponseAllocator.
"""

from __future__ import annotations

import asyncio
import queue
from dataclasses import dataclass, field
from typing import Any

from .. import request as core
from .allocators import DeviceOrMemoryType, MemoryAllocator, ResponseAllocator
from .errors import InvalidArgumentError
from .model_ref import ModelRef
from .tensor import Tensor

_PARAMETER_TYPES = (str, int, float, bool)


@dataclass
class InferenceRequest:
    """A request for `model`: inputs (Tensor, numpy, lists, DLPack objects), parameters, the
    outputs wanted (all when empty), where outputs go, and an optional response queue
    (queue.SimpleQueue for `infer`, asyncio.Queue for `async_infer`) that receives every
    response as it arrives, besides the iterator."""

    model: ModelRef
    request_id: str | None = None
    flags: int = 0
    correlation_id: int | str | None = None
    priority: int = 0
    timeout: int = 0
    inputs: dict[str, Any] = field(default_factory=dict)
    parameters: dict[str, str | int | float | bool] = field(default_factory=dict)
    requested_outputs: list[str] = field(default_factory=list)
    output_memory_type: DeviceOrMemoryType | None = None
    output_memory_allocator: MemoryAllocator | None = None
    response_queue: queue.SimpleQueue | asyncio.Queue | None = None

    def _to_core(self) -> tuple[core.InferenceRequest, ResponseAllocator]:
        """The core request and the output allocator; raises InvalidArgumentError for anything
        Triton's binding refuses before sending."""
        allocator = ResponseAllocator(self.output_memory_allocator, self.output_memory_type)
        for key, value in self.parameters.items():
            if not isinstance(value, _PARAMETER_TYPES):
                raise InvalidArgumentError(
                    f"Unsupported Value: {type(value)}. Request Parameter '{key}' must be one "
                    "of str, int, float or bool"
                )
        inputs = {name: Tensor._from_object(value)._to_core(name)
                  for name, value in self.inputs.items()}
        request = core.InferenceRequest(
            self.model.name,
            self.model.version,
            id=self.request_id or "",
            inputs=inputs,
            requested_outputs=[core.RequestedOutput(name) for name in self.requested_outputs],
            parameters=dict(self.parameters),
            correlation_id=self.correlation_id if self.correlation_id is not None else 0,
            flags=self.flags,
            priority=self.priority,
            timeout_us=self.timeout,
        )
        return request, allocator
