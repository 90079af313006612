"""What the dynamic batcher needs of a custom batching strategy (Triton's
TRITONBACKEND_ModelBatch* functions): the model's layer provides one when the model names a
strategy library; the scheduler never sees how it is implemented."""

from __future__ import annotations

from typing import Protocol

from ..request import InferenceRequest


class BatchStrategy(Protocol):
    """Asked, for each batch the dynamic batcher forms, whether each candidate joins it.

    `begin` starts a batch and returns the strategy's handle on it, `include` is asked for the
    candidates in queue order (the first one too) until one is refused, and `end` closes the
    batch. A call the strategy fails is logged (its answer stands as the strategy left it): none
    raises.
    """

    def begin(self) -> int: ...

    def include(self, batch: int, request: InferenceRequest) -> bool: ...

    def end(self, batch: int) -> None: ...
