"""PyTriton's ModelClient and DecoupledModelClient: numpy in, numpy out, over the real
tritonclient (HTTP or gRPC).

`ModelClient("localhost:8000", "add")` (HTTP unless the URL says grpc://; ports default to 8000
and 8001 as in PyTriton). `infer_batch(**inputs)` sends whole batches, `infer_sample(**inputs)`
one sample (a batch dimension added, then taken off the outputs, when the model batches);
inputs may also be given positionally, in the model's input order. Datatypes are the model's.
`DecoupledModelClient("grpc://localhost:8001", "chat")` does the same for a decoupled model
over a gRPC stream, each call returning an iterator of the responses as they arrive.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from ...datatypes import NUMPY_DTYPES
from .client_errors import (
    PyTritonClientClosedError,
    PyTritonClientInferenceServerError,
    PyTritonClientInvalidUrlError,
    PyTritonClientModelDoesntSupportBatchingError,
    PyTritonClientTimeoutError,
    PyTritonClientValueError,
)


def server_address(url: str) -> tuple[str, str]:
    """(scheme, "host:port") of a PyTriton client URL: http unless it says grpc://, ports
    8000 / 8001 when it names none, as PyTriton reads it."""
    if not isinstance(url, str):
        raise PyTritonClientInvalidUrlError(f"Invalid url {url}. Url must be a string.")
    try:
        parsed = urllib.parse.urlparse(url if "://" in url else f"http://{url}")
        scheme = parsed.scheme.lower()
        if scheme not in ("http", "grpc"):
            raise ValueError(f"Invalid scheme {scheme}. Only grpc and http are supported.")
        port = parsed.port or (8001 if scheme == "grpc" else 8000)
    except ValueError as exc:
        raise PyTritonClientInvalidUrlError(f"Invalid url {url}: {exc}") from exc
    if not parsed.hostname:
        raise PyTritonClientInvalidUrlError(f"Invalid url {url}: no host")
    return scheme, f"{parsed.hostname}:{port}"


class ModelClient:
    def __init__(self, url: str, model_name: str, model_version: str | None = None, *,
                 lazy_init: bool = True, init_timeout_s: float | None = None,
                 inference_timeout_s: float | None = None,
                 access_token: str | None = None) -> None:
        scheme, address = server_address(url)
        self._module: Any = grpcclient if scheme == "grpc" else httpclient
        self._client = self._module.InferenceServerClient(address)
        self._closed = False
        self.model_name = model_name
        self.model_version = model_version or ""
        self._init_timeout_s = init_timeout_s if init_timeout_s is not None else 300.0
        self._inference_timeout_s = inference_timeout_s
        # PyTriton 0.7's token for restricted endpoints, sent with every call.
        self._headers: dict[str, str] = {}
        if access_token is not None:
            prefix = "triton-grpc-protocol-" if scheme == "grpc" else ""
            self._headers[f"{prefix}triton-access-token"] = access_token
        self._inputs: list[dict[str, Any]] | None = None
        self._outputs: list[str] = []
        self._batching = True
        self._decoupled = False
        if not lazy_init:
            self._initialize()

    def __enter__(self) -> ModelClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection; using the client afterwards raises
        PyTritonClientClosedError. A second close does nothing."""
        if not self._closed:
            self._closed = True
            self._client.close()

    def _ensure_open(self) -> None:
        if self._closed:
            raise PyTritonClientClosedError("ModelClient is closed")

    def wait_for_model(self, timeout_s: float) -> None:
        self._ensure_open()
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if self._client.is_model_ready(self.model_name, self.model_version,
                                               headers=self._headers):
                    return
            except (InferenceServerException, OSError):  # not reachable yet
                pass
            if time.monotonic() >= deadline:
                raise PyTritonClientTimeoutError(
                    f"model {self.model_name} not ready within {timeout_s} s")
            time.sleep(0.05)

    @property
    def is_batching_supported(self) -> bool:
        """Whether the model has a batch dimension (max_batch_size > 0)."""
        if self._inputs is None:
            self._initialize()
        return self._batching

    def _initialize(self) -> None:
        self.wait_for_model(self._init_timeout_s)
        metadata = self._client.get_model_metadata(self.model_name, self.model_version,
                                                   headers=self._headers)
        if not isinstance(metadata, dict):  # gRPC answers in protobuf messages
            metadata = {"inputs": [{"name": t.name, "datatype": t.datatype}
                                   for t in metadata.inputs],
                        "outputs": [{"name": t.name} for t in metadata.outputs]}
        config = self._client.get_model_config(self.model_name, self.model_version,
                                               headers=self._headers,
                                               **({"as_json": True} if self._module is grpcclient
                                                  else {}))
        config = config.get("config", config)  # gRPC wraps it in a ModelConfigResponse
        self._batching = int(config.get("max_batch_size", 0)) > 0
        self._decoupled = bool(config.get("model_transaction_policy", {}).get("decoupled"))
        self._inputs = metadata["inputs"]
        self._outputs = [t["name"] for t in metadata["outputs"]]

    def infer_batch(self, *inputs: np.ndarray, parameters: dict[str, Any] | None = None,
                    headers: dict[str, str] | None = None,
                    **named_inputs: np.ndarray) -> Any:
        self._ensure_open()
        if not self.is_batching_supported:
            raise PyTritonClientModelDoesntSupportBatchingError(
                f"Model {self.model_name} doesn't support batching - use infer_sample method "
                "instead")
        return self._infer(self._tensors(inputs, named_inputs), parameters, headers)

    def infer_sample(self, *inputs: np.ndarray, parameters: dict[str, Any] | None = None,
                     headers: dict[str, str] | None = None,
                     **named_inputs: np.ndarray) -> Any:
        self._ensure_open()
        if self.is_batching_supported:
            inputs = tuple(np.asarray(v)[np.newaxis, ...] for v in inputs)
            named_inputs = {k: np.asarray(v)[np.newaxis, ...] for k, v in named_inputs.items()}
        result = self._infer(self._tensors(inputs, named_inputs), parameters, headers)
        return self._debatched(result) if self._batching else result

    def _tensors(self, inputs: tuple[np.ndarray, ...],
                 named_inputs: dict[str, np.ndarray]) -> list[Any]:
        """The request's tensors, in the model's datatypes (positional inputs in its order)."""
        assert self._inputs is not None
        if inputs and named_inputs:
            raise PyTritonClientValueError("Use either positional or named inputs, not both")
        if inputs:
            pairs = zip(self._inputs, inputs, strict=False)
            named_inputs = {spec["name"]: value for spec, value in pairs}
        datatypes = {spec["name"]: spec["datatype"] for spec in self._inputs}
        tensors = []
        for name, value in named_inputs.items():
            if name not in datatypes:
                raise PyTritonClientValueError(f"model {self.model_name} has no input {name}")
            datatype = datatypes[name]
            array = np.asarray(value)
            if datatype != "BYTES":
                array = array.astype(NUMPY_DTYPES[datatype], copy=False)
            else:
                array = array.astype(np.object_)
            tensor = self._module.InferInput(name, list(array.shape), datatype)
            tensor.set_data_from_numpy(array)
            tensors.append(tensor)
        return tensors

    def _infer(self, tensors: list[Any], parameters: dict[str, Any] | None,
               headers: dict[str, str] | None) -> Any:
        if self._decoupled:
            raise PyTritonClientInferenceServerError(
                "Model config is decoupled. Use DecoupledModelClient instead.")
        kwargs: dict[str, Any] = {"model_version": self.model_version,
                                  "headers": {**self._headers, **(headers or {})},
                                  "parameters": parameters}
        if self._inference_timeout_s is not None and self._module is grpcclient:
            kwargs["client_timeout"] = self._inference_timeout_s
        try:
            result = self._client.infer(self.model_name, tensors, **kwargs)
        except InferenceServerException as exc:
            if "Deadline Exceeded" in str(exc.message()):
                raise PyTritonClientTimeoutError(
                    "Timeout occurred during inference request. Timeout: "
                    f"{self._inference_timeout_s} s. Message: {exc.message()}") from exc
            raise PyTritonClientInferenceServerError(
                f"Error occurred during inference request. Message: {exc.message()}") from exc
        return self._outputs_of(result)

    def _outputs_of(self, result: Any) -> dict[str, np.ndarray]:
        found = {}
        for name in self._outputs:
            array = result.as_numpy(name)
            if array is not None:
                found[name] = array
        return found

    def _debatched(self, result: Any) -> Any:
        return {name: array[0] for name, array in result.items()}


class DecoupledModelClient(ModelClient):
    """PyTriton's client for a decoupled model: gRPC only (a bidirectional stream, started with
    the first request); `infer_sample` / `infer_batch` return an iterator of each response's
    outputs, ending with the final response. One request at a time per client; parameters and
    headers are refused, as PyTriton refuses them."""

    def __init__(self, url: str, model_name: str, model_version: str | None = None, *,
                 lazy_init: bool = True, init_timeout_s: float | None = None,
                 inference_timeout_s: float | None = None,
                 access_token: str | None = None) -> None:
        super().__init__(url, model_name, model_version, lazy_init=lazy_init,
                         init_timeout_s=init_timeout_s, inference_timeout_s=inference_timeout_s,
                         access_token=access_token)
        if self._module is not grpcclient:
            raise PyTritonClientValueError(
                "DecoupledModelClient is only supported for grpc protocol")
        self._answers: queue.SimpleQueue[tuple[Any, Any]] = queue.SimpleQueue()
        self._busy = threading.Lock()
        self._streaming = False
        self._ids = itertools.count(1)

    def close(self) -> None:
        if self._streaming and not self._closed:
            self._client.stop_stream(cancel_requests=True)
            self._streaming = False
        super().close()

    def _infer(self, tensors: list[Any], parameters: dict[str, Any] | None,
               headers: dict[str, str] | None) -> Iterator[dict[str, np.ndarray]]:
        if not self._decoupled:
            raise PyTritonClientInferenceServerError(
                "Model config is coupled. Use ModelClient instead.")
        if parameters is not None:
            raise PyTritonClientValueError("DecoupledModelClient does not support parameters")
        if headers is not None:
            raise PyTritonClientValueError("DecoupledModelClient does not support headers")
        if not self._busy.acquire(blocking=False):
            raise PyTritonClientInferenceServerError("Inference is already in progress")
        request_id = str(next(self._ids))
        try:
            if not self._streaming:
                self._client.start_stream(
                    callback=lambda result, error: self._answers.put((result, error)),
                    headers=self._headers)
                self._streaming = True
            self._client.async_stream_infer(self.model_name, tensors,
                                            model_version=self.model_version,
                                            request_id=request_id,
                                            enable_empty_final_response=True)
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
                    result, error = self._answers.get(timeout=self._inference_timeout_s)
                except queue.Empty:
                    raise PyTritonClientTimeoutError(
                        "Timeout occurred during inference request. Timeout: "
                        f"{self._inference_timeout_s} s") from None
                if error is not None:
                    raise PyTritonClientInferenceServerError(
                        f"Error occurred during inference request. Message: {error.message()}"
                    ) from error
                response = result.get_response()
                if response.id != request_id:
                    continue
                if response.outputs:
                    yield self._outputs_of(result)
                final = response.parameters.get("triton_final_response")
                if final is not None and final.bool_param:
                    return
        finally:
            self._busy.release()

    def _debatched(self, result: Any) -> Any:
        return ({name: array[0] for name, array in each.items()} for each in result)
