"""InferenceResponse and the response iterators of Triton's in-process API.

`Model.infer` returns a ResponseIterator (blocking `for`), `Model.async_infer` an
AsyncResponseIterator (`async for`). Each yields the request's responses as the model sends
them: one for an ordinary model, any number for a decoupled one, the last with `final` set
(a decoupled model's flag-only final is a response with no outputs). With `raise_on_error`
an error response raises its error (Triton's class, the response appended to `args`).
`cancel()` asks the model to stop (TRITONSERVER_InferenceRequestCancel).

Responses are queued as they come, so a caller's response queue fills without anyone iterating,
as in Triton: converted on the thread that delivers them for `infer`, on the caller's event loop
(through the frontends' loop bridge) for `async_infer`.
"""

from __future__ import annotations

import asyncio
import queue
from dataclasses import dataclass, field
from typing import Any

from .. import request as core
from ..errors import TritonError as CoreError
from ..frontend import loop_bridge
from .allocators import ResponseAllocator
from .errors import InternalError, TritonError, api_error
from .model_ref import ModelRef
from .tensor import Tensor


@dataclass
class InferenceResponse:
    model: ModelRef
    request_id: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Tensor] = field(default_factory=dict)
    error: TritonError | None = None
    classification_label: str | None = None
    final: bool = False

    @staticmethod
    def _from_core(model: ModelRef, request_id: str, response: core.InferenceResponse | None,
                   flags: int, allocator: ResponseAllocator) -> InferenceResponse:
        result = InferenceResponse(model, request_id,
                                   final=bool(flags & core.RESPONSE_COMPLETE_FINAL))
        if response is None:
            return result
        result.parameters = dict(response.parameters)
        if response.error is not None:
            result.error = api_error(response.error)
            result.error.args += (result,)
        outputs: dict[str, Tensor] = {}
        for output in response.outputs:
            tensor = Tensor._from_core(output)
            if allocator.copies:  # BYTES too: their serialised form goes where asked, as in Triton
                tensor = tensor._placed(
                    allocator.place(output.name, tensor.memory_buffer.host_bytes()))
            outputs[output.name] = tensor
        result.outputs = outputs
        return result


# What a delivery puts in an iterator's queue: a response, or the error converting one raised.
_Item = Any


class _Responses:
    """What both iterators share: the core request, the conversion of each delivery."""

    def __init__(self, model: ModelRef, request: core.InferenceRequest,
                 allocator: ResponseAllocator, raise_on_error: bool) -> None:
        self._model = model
        self._request = request
        self._allocator = allocator
        self._raise_on_error = raise_on_error
        self._complete = False

    def cancel(self) -> None:
        """Ask the model to stop sending (the request is marked cancelled; a model that
        checks answers with its final response early)."""
        self._request.cancelled = True

    def _convert(self, response: core.InferenceResponse | None, flags: int) -> _Item:
        try:
            return InferenceResponse._from_core(
                self._model, self._request.id, response, flags, self._allocator)
        except CoreError as exc:
            return api_error(exc)
        except Exception as exc:  # noqa: BLE001 (a faulty allocator: the request's error, not a lost thread)
            return InternalError(f"Unexpected error in creating response object: {exc}")

    def _take(self, item: _Item) -> InferenceResponse:
        if isinstance(item, TritonError):
            self._complete = True
            raise item
        self._complete = item.final
        if item.error is not None and self._raise_on_error:
            raise item.error
        return item


class ResponseIterator(_Responses):
    def __init__(self, model: ModelRef, request: core.InferenceRequest,
                 allocator: ResponseAllocator, raise_on_error: bool,
                 user_queue: queue.SimpleQueue | None) -> None:
        super().__init__(model, request, allocator, raise_on_error)
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._user_queue = user_queue

    def _deliver(self, response: core.InferenceResponse | None, flags: int) -> None:
        item = self._convert(response, flags)
        self._queue.put(item)
        if self._user_queue is not None and isinstance(item, InferenceResponse):
            self._user_queue.put(item)

    def __iter__(self) -> ResponseIterator:
        return self

    def __next__(self) -> InferenceResponse:
        if self._complete:
            raise StopIteration
        return self._take(self._queue.get())


class AsyncResponseIterator(_Responses):
    def __init__(self, model: ModelRef, request: core.InferenceRequest,
                 allocator: ResponseAllocator, raise_on_error: bool,
                 user_queue: asyncio.Queue | None) -> None:
        super().__init__(model, request, allocator, raise_on_error)
        self._queue: asyncio.Queue = asyncio.Queue()
        self._user_queue = user_queue

    def _start(self, submit: loop_bridge.Submit) -> None:
        """Send the request; each response comes back through the loop bridge, converted
        and queued on this loop (so the caller's queue fills without anyone iterating)."""
        loop_bridge.each_on_loop(submit, self._request, self._on_response)

    def _on_response(self, response: core.InferenceResponse | None, final: bool) -> None:
        self._put(self._convert(response, core.RESPONSE_COMPLETE_FINAL if final else 0))

    def _put(self, item: _Item) -> None:
        self._queue.put_nowait(item)
        if self._user_queue is not None and isinstance(item, InferenceResponse):
            self._user_queue.put_nowait(item)

    def __aiter__(self) -> AsyncResponseIterator:
        return self

    async def __anext__(self) -> InferenceResponse:
        if self._complete:
            raise StopAsyncIteration
        return self._take(await self._queue.get())
