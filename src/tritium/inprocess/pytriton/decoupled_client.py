"""PyTriton's DecoupledModelClient: ModelClient's calls for a decoupled model, over a gRPC
stream, each returning an iterator of the responses as they arrive.

`DecoupledModelClient("grpc://localhost:8001", "chat")`; the stream starts with the first
request. Each wait for a next response is bounded by `inference_timeout_s` when one is given;
without one the client waits as long as the model takes (PyTriton's client, whatever its
documentation says, never times a stream out).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from .client import ModelClient, outputs_of
from .client_errors import (
    PyTritonClientInferenceServerError,
    PyTritonClientTimeoutError,
    PyTritonClientValueError,
)
from .model_config import TritonModelConfig


class DecoupledModelClient(ModelClient):
    """One request at a time per client; parameters and headers are refused, as PyTriton
    refuses them."""

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
                "DecoupledModelClient is only supported for grpc protocol")
        self._response_timeout_s = inference_timeout_s
        self._answers: queue.SimpleQueue[tuple[Any, Any]] = queue.SimpleQueue()
        self._busy = threading.Lock()
        self._streaming = False

    def close(self) -> None:
        if self._streaming and self._infer_client is not None:
            self._infer_client.stop_stream(cancel_requests=True)
            self._streaming = False
        super().close()

    def _infer(self, inputs: tuple[Any, ...] | dict[str, Any],
               parameters: dict[str, Any] | None,
               headers: dict[str, Any] | None) -> Iterator[dict[str, np.ndarray]]:
        if not self.model_config.decoupled:
            raise PyTritonClientInferenceServerError(
                "Model config is coupled. Use ModelClient instead.")
        if parameters is not None:
            raise PyTritonClientValueError("DecoupledModelClient does not support parameters")
        if headers is not None:
            raise PyTritonClientValueError("DecoupledModelClient does not support headers")
        tensors, outputs = self._create_request(inputs)
        if not self._busy.acquire(blocking=False):
            raise PyTritonClientInferenceServerError("Inference is already in progress")
        request_id = self._next_request_id()
        try:
            if not self._streaming:
                self._infer_client.start_stream(
                    callback=lambda result, error: self._answers.put((result, error)),
                    headers=self._headers)
                self._streaming = True
            self._infer_client.async_stream_infer(
                self._model_name, tensors, model_version=self._model_version or "",
                outputs=outputs, request_id=request_id, enable_empty_final_response=True)
        except BaseException:
            self._busy.release()
            raise
        return self._responses(request_id)

    def _responses(self, request_id: str) -> Iterator[dict[str, np.ndarray]]:
        """The request's responses as they arrive (another request's, left over from an
        iterator abandoned early, are skipped); the final one ends the iteration."""
        try:
            while True:
                try:
                    result, error = self._answers.get(timeout=self._response_timeout_s)
                except queue.Empty:
                    raise PyTritonClientTimeoutError(
                        "Timeout occurred during inference request. Timeout: "
                        f"{self._response_timeout_s} s") from None
                if error is not None:
                    raise PyTritonClientInferenceServerError(
                        f"Error occurred during inference request. Message: {error.message()}"
                    ) from error
                response = result.get_response()
                if response.id != request_id:
                    continue
                if response.outputs:
                    yield outputs_of(result)
                final = response.parameters.get("triton_final_response")
                if final is not None and final.bool_param:
                    return
        finally:
            self._busy.release()

    def _debatched(self, result: Any) -> Any:
        return ({name: array[0] for name, array in each.items()} for each in result)
