"""PyTriton's FuturesModelClient: ModelClient's calls, each returning a
concurrent.futures.Future at once, run by up to max_workers threads.

Each thread holds its own ModelClient (see client_pool for why), so requests run side by side.
`model_config()` answers the model's TritonModelConfig. `close(wait=True)` lets the queued
requests finish first; a call after close raises
PyTritonClientClosedError, and with `non_blocking=True` a call finding the queue full raises
PyTritonClientQueueFullError (a blocking call waits for room up to inference_timeout_s).
"""

from __future__ import annotations

from concurrent.futures import Future
from operator import attrgetter, methodcaller
from typing import Any

import numpy as np

from .client import ModelClient
from .client_pool import ClientPool
from .client_utils import TritonUrl
from .model_config import TritonModelConfig


class FuturesModelClient:
    def __init__(self, url: str, model_name: str, model_version: str | None = None, *,
                 max_workers: int | None = 128, max_queue_size: int | None = 128,
                 non_blocking: bool = False, init_timeout_s: float | None = None,
                 inference_timeout_s: float | None = None) -> None:
        TritonUrl.from_url(url)  # a bad URL fails here, not in every Future
        self._pool: ClientPool[ModelClient] = ClientPool(
            "FuturesModelClient",
            lambda: ModelClient(url, model_name, model_version, init_timeout_s=init_timeout_s,
                                inference_timeout_s=inference_timeout_s),
            ModelClient.close, max_workers=max_workers, max_queue_size=max_queue_size,
            non_blocking=non_blocking, queue_timeout_s=inference_timeout_s)

    def __enter__(self) -> FuturesModelClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self, wait: bool = True) -> None:
        self._pool.close(wait)

    def wait_for_model(self, timeout_s: float) -> Future[None]:
        return self._pool.submit(methodcaller("wait_for_model", timeout_s))

    def model_config(self) -> Future[TritonModelConfig]:
        """The model's configuration, once a worker has waited for the model and read it."""
        return self._pool.submit(attrgetter("model_config"))

    def infer_sample(self, *inputs: np.ndarray, parameters: dict[str, Any] | None = None,
                     headers: dict[str, str] | None = None,
                     **named_inputs: np.ndarray) -> Future[dict[str, np.ndarray]]:
        return self._pool.submit(methodcaller("infer_sample", *inputs, parameters=parameters,
                                              headers=headers, **named_inputs))

    def infer_batch(self, *inputs: np.ndarray, parameters: dict[str, Any] | None = None,
                    headers: dict[str, str] | None = None,
                    **named_inputs: np.ndarray) -> Future[dict[str, np.ndarray]]:
        return self._pool.submit(methodcaller("infer_batch", *inputs, parameters=parameters,
                                              headers=headers, **named_inputs))
