"""PyTriton's asyncio clients: AsyncioModelClient (`await client.infer_sample(...)`, HTTP or
gRPC) and AsyncioDecoupledModelClient (`async for response in client.infer_sample(...)`, gRPC,
for a decoupled model).

Both run the synchronous clients on worker threads (client_pool) and await their results, so
requests, errors and timeouts behave exactly as ModelClient's and DecoupledModelClient's do,
and concurrent requests go out side by side, one client per thread. Both are async context
managers; with lazy_init=False entering waits for the model.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from operator import methodcaller
from typing import Any

import numpy as np

from .client import DecoupledModelClient, ModelClient, server_address
from .client_errors import PyTritonClientValueError
from .client_pool import ClientPool

# Requests in flight at once per asyncio client; each holds a thread and a connection.
_MAX_WORKERS = 64


class _AsyncioClient:
    """What both asyncio clients share: the pool of synchronous clients, waiting, closing."""

    _client_class: type[ModelClient] = ModelClient

    def __init__(self, url: str, model_name: str, model_version: str | None = None, *,
                 lazy_init: bool = True, init_timeout_s: float | None = None,
                 inference_timeout_s: float | None = None) -> None:
        self._scheme, _ = server_address(url)  # a bad URL fails here, not in every request
        self._lazy_init = lazy_init
        self._init_timeout_s = init_timeout_s if init_timeout_s is not None else 300.0
        client_class = self._client_class
        # An unbounded queue: a full one would block the event loop in submit().
        self._pool: ClientPool[ModelClient] = ClientPool(
            type(self).__name__,
            lambda: client_class(url, model_name, model_version, init_timeout_s=init_timeout_s,
                                 inference_timeout_s=inference_timeout_s),
            client_class.close, max_workers=_MAX_WORKERS, max_queue_size=None,
            non_blocking=True, queue_timeout_s=None)

    async def __aenter__(self) -> Any:
        if not self._lazy_init:
            try:
                await self.wait_for_model(self._init_timeout_s)
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
        await self._run(methodcaller("wait_for_model", timeout_s))

    async def _run(self, call: Callable[[ModelClient], Any]) -> Any:
        return await asyncio.wrap_future(self._pool.submit(call))


class AsyncioModelClient(_AsyncioClient):
    async def infer_sample(self, *inputs: np.ndarray, parameters: dict[str, Any] | None = None,
                           headers: dict[str, str] | None = None,
                           **named_inputs: np.ndarray) -> dict[str, np.ndarray]:
        return await self._run(methodcaller("infer_sample", *inputs, parameters=parameters,
                                            headers=headers, **named_inputs))

    async def infer_batch(self, *inputs: np.ndarray, parameters: dict[str, Any] | None = None,
                          headers: dict[str, str] | None = None,
                          **named_inputs: np.ndarray) -> dict[str, np.ndarray]:
        return await self._run(methodcaller("infer_batch", *inputs, parameters=parameters,
                                            headers=headers, **named_inputs))


class AsyncioDecoupledModelClient(_AsyncioClient):
    _client_class = DecoupledModelClient

    def __init__(self, url: str, model_name: str, model_version: str | None = None, *,
                 lazy_init: bool = True, init_timeout_s: float | None = None,
                 inference_timeout_s: float | None = None) -> None:
        super().__init__(url, model_name, model_version, lazy_init=lazy_init,
                         init_timeout_s=init_timeout_s, inference_timeout_s=inference_timeout_s)
        if self._scheme != "grpc":
            raise PyTritonClientValueError(
                "AsyncioDecoupledModelClient is only supported for grpc protocol")

    def infer_sample(self, *inputs: np.ndarray, parameters: dict[str, Any] | None = None,
                     headers: dict[str, str] | None = None,
                     **named_inputs: np.ndarray) -> AsyncIterator[dict[str, np.ndarray]]:
        return self._stream(methodcaller("infer_sample", *inputs, parameters=parameters,
                                         headers=headers, **named_inputs))

    def infer_batch(self, *inputs: np.ndarray, parameters: dict[str, Any] | None = None,
                    headers: dict[str, str] | None = None,
                    **named_inputs: np.ndarray) -> AsyncIterator[dict[str, np.ndarray]]:
        return self._stream(methodcaller("infer_batch", *inputs, parameters=parameters,
                                         headers=headers, **named_inputs))

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
