"""Model: a handle on one model (name, version) of an in-process server, as in Triton's API.

It is not checked until used: `infer`/`async_infer` send a request straight to the core
(`InferenceServer.infer_async`, no frontend, no copy of the inputs), `metadata`, `config`,
`statistics`, `ready`, `batch_properties` and `transaction_properties` ask the core.
"""

from __future__ import annotations

import asyncio
import queue
from typing import TYPE_CHECKING, Any, Protocol

from ..config import model_config_to_json
from ..errors import TritonError as CoreError
from .enums import ModelBatchFlag, ModelTxnPropertyFlag
from .errors import InvalidArgumentError, api_error
from .frontends import statistics_json
from .request import InferenceRequest
from .response import AsyncResponseIterator, ResponseIterator

if TYPE_CHECKING:
    from ..server import InferenceServer


class ServerHandle(Protocol):
    """What a model handle needs of its `Server` (`server.py`): the started core. A protocol,
    so that the server imports the model and not the other way round."""

    def _started(self) -> InferenceServer: ...


class Model:
    def __init__(self, server: ServerHandle, name: str, version: int = -1,
                 state: str | None = None, reason: str | None = None) -> None:
        self._server = server
        self._core: InferenceServer = server._started()
        self.name = name
        self.version = version
        self.state = state
        self.reason = reason

    def __repr__(self) -> str:
        return str({"name": self.name, "version": self.version, "state": self.state})

    def create_request(self, **kwargs: Any) -> InferenceRequest:
        kwargs.pop("model", None)
        return InferenceRequest(model=self, **kwargs)

    def infer(self, inference_request: InferenceRequest | None = None,
              raise_on_error: bool = True, **kwargs: Any) -> ResponseIterator:
        """Send a request; iterate the returned object for its responses (blocking)."""
        request = inference_request or InferenceRequest(model=self, **kwargs)
        if request.response_queue is not None and not isinstance(
                request.response_queue, queue.SimpleQueue):
            raise InvalidArgumentError("queue.SimpleQueue must be used for response iterator")
        core_request, allocator = request._to_core()
        responses = ResponseIterator(self, core_request, allocator, raise_on_error,
                                     request.response_queue)
        self._send(core_request, responses._deliver)
        return responses

    def async_infer(self, inference_request: InferenceRequest | None = None,
                    raise_on_error: bool = True, **kwargs: Any) -> AsyncResponseIterator:
        """Send a request from a coroutine; `async for` over the returned object."""
        request = inference_request or InferenceRequest(model=self, **kwargs)
        if request.response_queue is not None and not isinstance(
                request.response_queue, asyncio.Queue):
            raise InvalidArgumentError(
                "asyncio.Queue must be used for async response iterator")
        core_request, allocator = request._to_core()
        responses = AsyncResponseIterator(self, core_request, allocator, raise_on_error,
                                          request.response_queue)
        try:
            responses._start(self._core.infer_async)
        except CoreError as exc:
            raise api_error(exc) from None
        return responses

    def _send(self, request: Any, deliver: Any) -> None:
        try:
            self._core.infer_async(request, deliver)
        except CoreError as exc:
            raise api_error(exc) from None

    def metadata(self) -> dict[str, Any]:
        return self._ask(self._core.model_metadata, self.name, self._version_text())

    def ready(self) -> bool:
        return self._core.model_ready(self.name, self.version)

    def config(self, config_version: int = 1) -> dict[str, Any]:
        if config_version != 1:
            raise InvalidArgumentError(
                f"model configuration version {config_version} not supported, only 1 is")
        config = self._ask(self._core.model_config, self.name, self._version_text())
        return model_config_to_json(config)

    def batch_properties(self) -> ModelBatchFlag:
        config = self._ask(self._core.model_config, self.name, self._version_text())
        return ModelBatchFlag.FIRST_DIM if config.max_batch_size > 0 else ModelBatchFlag.UNKNOWN

    def transaction_properties(self) -> ModelTxnPropertyFlag:
        config = self._ask(self._core.model_config, self.name, self._version_text())
        return (ModelTxnPropertyFlag.DECOUPLED if config.model_transaction_policy.decoupled
                else ModelTxnPropertyFlag.ONE_TO_ONE)

    def statistics(self) -> dict[str, Any]:
        snapshots = self._ask(self._core.model_statistics, self.name, self._version_text())
        return statistics_json(snapshots)

    def _version_text(self) -> str:
        return "" if self.version < 0 else str(self.version)

    @staticmethod
    def _ask(method: Any, *args: Any) -> Any:
        try:
            return method(*args)
        except CoreError as exc:
            raise api_error(exc) from None
