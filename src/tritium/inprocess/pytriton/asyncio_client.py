"""PyTriton's asyncio clients: AsyncioModelClient (`await client.infer_sample(...)`, HTTP or
gRPC) and AsyncioDecoupledModelClient (`async for response in client.infer_sample(...)`, gRPC,
for a decoupled model).

Both run the synchronous clients on worker threads (client_pool) and await their results, so
requests, errors and timeouts behave as ModelClient's and DecoupledModelClient's do, and
concurrent requests go out side by side, one client per thread. As PyTriton's, they answer
`await client.model_config` (read once, after waiting up to init_timeout_s for the model), take
a configuration (`model_config=`, `ensure_model_is_ready=`, `from_existing_client`) so as not
to read it again, and check a call's arguments before anything is sent. Both are async context
managers; with lazy_init=False entering waits for the model.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from operator import attrgetter, methodcaller
from typing import Any

import numpy as np

from .client import ModelClient, check_inputs, check_parameters
from .client_errors import (
    PyTritonClientInferenceServerError,
    PyTritonClientModelDoesntSupportBatchingError,
    PyTritonClientTimeoutError,
    PyTritonClientValueError,
)
from .client_pool import ClientPool
from .client_utils import (
    _DEFAULT_WAIT_FOR_MODEL_TIMEOUT_S,
    DEFAULT_INFERENCE_TIMEOUT_S,
    TritonUrl,
    extract_access_token_from_headers,
)
from .decoupled_client import DecoupledModelClient
from .model_config import TritonModelConfig

# Requests in flight at once per asyncio client; each holds a thread and a connection.
_MAX_WORKERS = 64


class _AsyncioClient:
    """What both asyncio clients share: the pool of synchronous clients, the model's
    configuration, waiting, closing."""

    _client_class: type[ModelClient] = ModelClient

    def __init__(self, url: str, model_name: str, model_version: str | None = None, *,
                 lazy_init: bool = True, init_timeout_s: float | None = None,
                 inference_timeout_s: float | None = None,
                 model_config: TritonModelConfig | None = None,
                 ensure_model_is_ready: bool = True,
                 access_token: str | None = None) -> None:
        self._triton_url = TritonUrl.from_url(url)  # a bad URL fails here, not in requests
        self._url = self._triton_url.without_scheme
        self._model_name = model_name
        self._model_version = model_version
        self._lazy_init = lazy_init
        self._init_timeout_s = (_DEFAULT_WAIT_FOR_MODEL_TIMEOUT_S if init_timeout_s is None
                                else init_timeout_s)
        self._inference_timeout_s = (DEFAULT_INFERENCE_TIMEOUT_S if inference_timeout_s is None
                                     else inference_timeout_s)
        self._model_config = model_config
        self._model_ready = model_config is not None and not ensure_model_is_ready
        self._access_token = access_token
        client_class = self._client_class

        def make_client() -> ModelClient:
            # Once this client has waited for the model, its workers need not wait again.
            return client_class(url, model_name, model_version, init_timeout_s=init_timeout_s,
                                inference_timeout_s=inference_timeout_s,
                                model_config=self._model_config,
                                ensure_model_is_ready=not self._model_ready,
                                access_token=access_token)

        # An unbounded queue: a full one would block the event loop in submit().
        self._pool: ClientPool[ModelClient] = ClientPool(
            type(self).__name__, make_client, client_class.close, max_workers=_MAX_WORKERS,
            max_queue_size=None, non_blocking=True, queue_timeout_s=None)

    @classmethod
    def from_existing_client(cls, existing_client: Any) -> Any:
        """A client of the same model, server, timeouts and token that reuses the existing
        client's configuration instead of waiting and reading it again."""
        kwargs: dict[str, Any] = {}
        if getattr(existing_client, "_model_config", None) is not None:
            kwargs = {"model_config": existing_client._model_config,
                      "ensure_model_is_ready": False}
        token = getattr(existing_client, "_access_token", None) or \
            extract_access_token_from_headers(getattr(existing_client, "_headers", None))
        if token is not None:
            kwargs["access_token"] = token
        return cls(existing_client._triton_url.with_scheme, existing_client._model_name,
                   existing_client._model_version,
                   init_timeout_s=existing_client._init_timeout_s,
                   inference_timeout_s=existing_client._inference_timeout_s, **kwargs)

    async def __aenter__(self) -> Any:
        if not self._lazy_init:
            try:
                await self.wait_for_model(self._init_timeout_s)
                await self.model_config
            except BaseException:
                await self.close()
                raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Let requests in flight finish, then close every worker's client."""
        await asyncio.to_thread(self._pool.close)

    async def wait_for_model(self, timeout_s: float) -> None:
        """Wait until the server and the model are ready (PyTritonClientTimeoutError after
        timeout_s)."""
        await self._until_ready(methodcaller("wait_for_model", timeout_s), timeout_s)
        self._model_ready = True

    @property
    async def model_config(self) -> TritonModelConfig:
        """The model's configuration (awaited), read once."""
        if self._model_config is None:
            self._model_config = await self._until_ready(attrgetter("model_config"),
                                                         self._init_timeout_s)
            self._model_ready = True  # reading it waited for the model
        return self._model_config

    async def _until_ready(self, call: Callable[[ModelClient], Any], timeout_s: float) -> Any:
        try:
            return await self._run(call)
        except PyTritonClientTimeoutError as exc:
            raise PyTritonClientTimeoutError(
                f"Timeout while waiting for model {self._model_name} to be ready "
                f"(timeout={timeout_s:0.2f})") from exc

    async def _checked_config(self, inputs: tuple[Any, ...], named_inputs: dict[str, Any],
                              parameters: dict[str, Any] | None,
                              headers: dict[str, Any] | None, batch: bool,
                              decoupled: bool) -> TritonModelConfig:
        """The model's configuration, once the call's arguments are found right for it."""
        check_inputs(inputs, named_inputs)
        check_parameters(parameters)
        check_parameters(headers)
        config = await self.model_config
        if batch and config.max_batch_size <= 0:
            raise PyTritonClientModelDoesntSupportBatchingError(
                f"Model {config.model_name} doesn't support batching - use infer_sample method "
                "instead")
        if config.decoupled and not decoupled:
            raise PyTritonClientInferenceServerError(
                "Model config is decoupled. Use AsyncioDecoupledModelClient instead.")
        if decoupled and not config.decoupled:
            raise PyTritonClientInferenceServerError(
                "Model config is coupled. Use AsyncioModelClient instead.")
        return config

    async def _run(self, call: Callable[[ModelClient], Any]) -> Any:
        return await asyncio.wrap_future(self._pool.submit(call))


class AsyncioModelClient(_AsyncioClient):
    async def infer_sample(self, *inputs: np.ndarray, parameters: dict[str, Any] | None = None,
                           headers: dict[str, Any] | None = None,
                           **named_inputs: np.ndarray) -> dict[str, np.ndarray]:
        await self._checked_config(inputs, named_inputs, parameters, headers, batch=False,
                                   decoupled=False)
        return await self._run(methodcaller("infer_sample", *inputs, parameters=parameters,
                                            headers=headers, **named_inputs))

    async def infer_batch(self, *inputs: np.ndarray, parameters: dict[str, Any] | None = None,
                          headers: dict[str, Any] | None = None,
                          **named_inputs: np.ndarray) -> dict[str, np.ndarray]:
        await self._checked_config(inputs, named_inputs, parameters, headers, batch=True,
                                   decoupled=False)
        return await self._run(methodcaller("infer_batch", *inputs, parameters=parameters,
                                            headers=headers, **named_inputs))


class AsyncioDecoupledModelClient(_AsyncioClient):
    _client_class = DecoupledModelClient

    def __init__(self, url: str, model_name: str, model_version: str | None = None, *,
                 lazy_init: bool = True, init_timeout_s: float | None = None,
                 inference_timeout_s: float | None = None,
                 model_config: TritonModelConfig | None = None,
                 ensure_model_is_ready: bool = True,
                 access_token: str | None = None) -> None:
        super().__init__(url, model_name, model_version, lazy_init=lazy_init,
                         init_timeout_s=init_timeout_s, inference_timeout_s=inference_timeout_s,
                         model_config=model_config, ensure_model_is_ready=ensure_model_is_ready,
                         access_token=access_token)
        if self._triton_url.scheme != "grpc":
            raise PyTritonClientValueError(
                "AsyncioDecoupledModelClient is only supported for grpc protocol")

    async def infer_sample(self, *inputs: np.ndarray, parameters: dict[str, Any] | None = None,
                           headers: dict[str, Any] | None = None,
                           **named_inputs: np.ndarray) -> AsyncIterator[dict[str, np.ndarray]]:
        async for response in self._streamed(False, inputs, parameters, headers,
                                             named_inputs):
            yield response

    async def infer_batch(self, *inputs: np.ndarray, parameters: dict[str, Any] | None = None,
                          headers: dict[str, Any] | None = None,
                          **named_inputs: np.ndarray) -> AsyncIterator[dict[str, np.ndarray]]:
        async for response in self._streamed(True, inputs, parameters, headers, named_inputs):
            yield response

    async def _streamed(self, batch: bool, inputs: tuple[np.ndarray, ...],
                        parameters: dict[str, Any] | None, headers: dict[str, Any] | None,
                        named_inputs: dict[str, np.ndarray]
                        ) -> AsyncIterator[dict[str, np.ndarray]]:
        """infer_batch's (`batch`) or infer_sample's responses, the call checked first."""
        await self._checked_config(inputs, named_inputs, parameters, headers, batch=batch,
                                   decoupled=True)
        async for response in self._stream(methodcaller(
                "infer_batch" if batch else "infer_sample", *inputs, parameters=parameters,
                headers=headers, **named_inputs)):
            yield response

    async def _stream(self, call: Callable[[ModelClient], Iterator[dict[str, np.ndarray]]]
                      ) -> AsyncIterator[dict[str, np.ndarray]]:
        """The responses a worker reads from its stream, handed to the event loop one by one;
        a consumer that stops early stops the worker at the next response."""
        loop = asyncio.get_running_loop()
        arrivals: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        abandoned = threading.Event()

        def post(kind: str, value: Any) -> None:
            try:
                loop.call_soon_threadsafe(arrivals.put_nowait, (kind, value))
            except RuntimeError:  # the loop is gone: nobody is listening any more
                pass

        def relay(client: ModelClient) -> None:
            try:
                for response in call(client):
                    if abandoned.is_set():
                        return
                    post("response", response)
            except BaseException as exc:  # re-raised on the event loop's side
                post("error", exc)
            else:
                post("end", None)

        self._pool.submit(relay)
        try:
            while True:
                kind, value = await arrivals.get()
                if kind == "end":
                    return
                if kind == "error":
                    raise value
                yield value
        finally:
            abandoned.set()
