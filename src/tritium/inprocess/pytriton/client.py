"""PyTriton's ModelClient: numpy in, numpy out, over the real tritonclient (HTTP or gRPC).

`ModelClient("localhost:8000", "add")` (HTTP unless the URL says grpc://; ports default to 8000
and 8001 as in PyTriton). `infer_batch(**inputs)` sends whole batches, `infer_sample(**inputs)`
one sample (a batch dimension added, then taken off the outputs, when the model batches);
inputs may also be given positionally, in the model's input order. Datatypes are the model's.

As in PyTriton, the client holds two tritonclient clients: one for inference, whose timeout is
`inference_timeout_s` (60 s by default; over HTTP the connection and network timeouts, over
gRPC each call's deadline), and one for readiness, configuration and model control. Before its
first request the client waits up to `init_timeout_s` (300 s) for the model and reads its
configuration (`model_config`, a TritonModelConfig); `lazy_init=False` does that at once, and
a configuration handed in (`model_config=`, or `from_existing_client`) spares the read.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import numpy as np
from tritonclient.utils import InferenceServerException

from .client_errors import (
    PyTritonClientClosedError,
    PyTritonClientInferenceServerError,
    PyTritonClientModelDoesntSupportBatchingError,
    PyTritonClientTimeoutError,
    PyTritonClientValueError,
)
from .client_utils import (
    _DEFAULT_WAIT_FOR_MODEL_TIMEOUT_S,
    DEFAULT_INFERENCE_TIMEOUT_S,
    TritonUrl,
    client_library,
    create_auth_headers,
    extract_access_token_from_headers,
    get_model_config,
    wait_for_model_ready,
    wait_for_server_ready,
)
from .model_config import TritonModelConfig
from .model_config import config_type as _config_type


def check_inputs(inputs: tuple[Any, ...], named_inputs: dict[str, Any]) -> None:
    """PyTriton's rule: inputs are given either all by position or all by name."""
    if not inputs and not named_inputs:
        raise PyTritonClientValueError("Provide input data")
    if inputs and named_inputs:
        raise PyTritonClientValueError(
            "Use either positional either keyword method arguments convention")


def check_parameters(values: dict[str, Any] | None) -> None:
    """Request parameters and headers: a dict of str keys to str, int or bool values."""
    if values is None:
        return
    if not isinstance(values, dict):
        raise PyTritonClientValueError("Parameters and headers must be a dictionary")
    for key, value in values.items():
        if not isinstance(key, str):
            raise PyTritonClientValueError("Parameter/header key must be a string")
        if not isinstance(value, (str, int, bool)):
            raise PyTritonClientValueError(
                "Parameter/header value must be a string, integer or boolean")


class ModelClient:
    def __init__(self, url: str, model_name: str, model_version: str | None = None, *,
                 lazy_init: bool = True, init_timeout_s: float | None = None,
                 inference_timeout_s: float | None = None,
                 model_config: TritonModelConfig | None = None,
                 ensure_model_is_ready: bool = True,
                 access_token: str | None = None) -> None:
        self._init_timeout_s = (_DEFAULT_WAIT_FOR_MODEL_TIMEOUT_S if init_timeout_s is None
                                else init_timeout_s)
        self._inference_timeout_s = (DEFAULT_INFERENCE_TIMEOUT_S if inference_timeout_s is None
                                     else inference_timeout_s)
        self._general_client: Any = self.create_client_from_url(url)
        self._infer_client: Any = self.create_client_from_url(url)
        # PyTriton 0.7's token for restricted endpoints, sent with every call.
        self._headers: dict[str, str] | None = (
            None if access_token is None
            else create_auth_headers(access_token, self._triton_url.scheme))
        self._model_name = model_name
        self._model_version = model_version
        self._request_ids = itertools.count(0)
        self._model_config = model_config
        # None: wait for the model before the first request; True: known to be ready.
        self._model_ready: bool | None = (
            True if model_config is not None and not ensure_model_is_ready else None)
        self._lazy_init = lazy_init
        if not lazy_init:
            self._wait_and_init_model_config(self._init_timeout_s)

    @classmethod
    def from_existing_client(cls, existing_client: Any) -> Any:
        """A client of the same model, server, timeouts and token that reuses the existing
        client's configuration (read already) instead of waiting and reading it again."""
        kwargs: dict[str, Any] = {}
        if getattr(existing_client, "_model_config", None) is not None:
            kwargs = {"model_config": existing_client._model_config,
                      "ensure_model_is_ready": False}
        token = extract_access_token_from_headers(getattr(existing_client, "_headers", None))
        if token is not None:
            kwargs["access_token"] = token
        return cls(existing_client._triton_url.with_scheme, existing_client._model_name,
                   existing_client._model_version,
                   init_timeout_s=existing_client._init_timeout_s,
                   inference_timeout_s=existing_client._inference_timeout_s, **kwargs)

    def create_client_from_url(self, url: str, network_timeout_s: float | None = None) -> Any:
        """A tritonclient client for the URL (which this client then talks to). Over HTTP its
        connection and network timeouts are inference_timeout_s, as PyTriton sets them
        (`network_timeout_s` is accepted for PyTriton's signature)."""
        self._triton_url = TritonUrl.from_url(url)
        self._url = self._triton_url.without_scheme
        kwargs: dict[str, float] = {}
        if self._triton_url.scheme == "http":
            kwargs = {"connection_timeout": self._inference_timeout_s,
                      "network_timeout": self._inference_timeout_s}
        return self.get_lib().InferenceServerClient(self._url, **kwargs)

    def get_lib(self) -> Any:
        """tritonclient's module for this client's protocol."""
        return client_library(self._triton_url)

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections; using the client afterwards raises
        PyTritonClientClosedError. A second close does nothing."""
        for client in (self._general_client, self._infer_client):
            if client is not None:
                client.close()
        self._general_client = self._infer_client = None

    def _general(self) -> Any:
        if self._general_client is None:
            raise PyTritonClientClosedError("ModelClient is closed")
        return self._general_client

    def wait_for_server(self, timeout_s: float) -> None:
        """Wait until the server is live and ready (PyTritonClientTimeoutError after
        timeout_s)."""
        wait_for_server_ready(self._general(), timeout_s=timeout_s, headers=self._headers)

    def wait_for_model(self, timeout_s: float) -> None:
        """Wait until the server and the model are ready (PyTritonClientTimeoutError after
        timeout_s)."""
        wait_for_model_ready(self._general(), self._model_name, self._model_version,
                             timeout_s=timeout_s, headers=self._headers)

    def load_model(self, config: str | None = None, files: dict[str, bytes] | None = None
                   ) -> None:
        """Ask the server to load this client's model (explicit model control), optionally
        with a configuration (JSON) and files in place of the repository's."""
        self._general().load_model(self._model_name, headers=self._headers, config=config,
                                   files=files)

    def unload_model(self) -> None:
        """Ask the server to unload this client's model."""
        self._general().unload_model(self._model_name, headers=self._headers)

    @property
    def model_config(self) -> TritonModelConfig:
        """The model's configuration, read once (after waiting up to init_timeout_s for the
        model)."""
        if self._model_config is None:
            self._model_config = get_model_config(self._general(), self._model_name,
                                                  self._model_version,
                                                  timeout_s=self._init_timeout_s,
                                                  headers=self._headers)
            self._model_ready = True  # reading it waited for the model
        return self._model_config

    @property
    def is_batching_supported(self) -> bool:
        """Whether the model has a batch dimension (max_batch_size > 0)."""
        return self.model_config.max_batch_size > 0

    def _wait_and_init_model_config(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        self.wait_for_model(timeout_s)
        self._model_ready = True
        self._model_config = get_model_config(
            self._general(), self._model_name, self._model_version,
            timeout_s=max(0.0, deadline - time.monotonic()), headers=self._headers)

    def infer_batch(self, *inputs: Any, parameters: dict[str, Any] | None = None,
                    headers: dict[str, Any] | None = None, **named_inputs: Any) -> Any:
        """Run the model on a batch: each input's first dimension is the batch."""
        check_inputs(inputs, named_inputs)
        check_parameters(parameters)
        check_parameters(headers)
        if not self.is_batching_supported:
            raise PyTritonClientModelDoesntSupportBatchingError(
                f"Model {self.model_config.model_name} doesn't support batching - use "
                "infer_sample method instead")
        return self._infer(inputs or named_inputs, parameters, headers)

    def infer_sample(self, *inputs: Any, parameters: dict[str, Any] | None = None,
                     headers: dict[str, Any] | None = None, **named_inputs: Any) -> Any:
        """Run the model on one sample: a batching model gets (and answers) a batch of one."""
        check_inputs(inputs, named_inputs)
        check_parameters(parameters)
        check_parameters(headers)
        if self.is_batching_supported:
            inputs = tuple(np.asarray(v)[np.newaxis, ...] for v in inputs)
            named_inputs = {k: np.asarray(v)[np.newaxis, ...] for k, v in named_inputs.items()}
        result = self._infer(inputs or named_inputs, parameters, headers)
        return self._debatched(result) if self.is_batching_supported else result

    def _create_request(self, inputs: tuple[Any, ...] | dict[str, Any]
                        ) -> tuple[list[Any], list[Any]]:
        """The request's tensors (positional inputs in the model's order, each in the model's
        datatype) and an output request for each of the model's outputs."""
        if self._infer_client is None:
            raise PyTritonClientClosedError("ModelClient is closed")
        if not self._model_ready:
            self._wait_and_init_model_config(self._init_timeout_s)
        config = self.model_config
        if isinstance(inputs, tuple):
            inputs = {str(spec.name): value for spec, value in zip(config.inputs, inputs,
                                                               strict=False)}
        dtypes = {str(spec.name): spec.dtype for spec in config.inputs}
        library = self.get_lib()
        tensors = []
        for name, value in inputs.items():
            array = np.asarray(value)
            if name in dtypes:  # an unknown input goes as it is, for the server to refuse
                array = array.astype(np.object_ if dtypes[name] is np.bytes_ else dtypes[name],
                                     copy=False)
            datatype = _datatype(array)
            tensor = library.InferInput(name, list(array.shape), datatype)
            tensor.set_data_from_numpy(array)
            tensors.append(tensor)
        outputs = [library.InferRequestedOutput(spec.name) for spec in config.outputs]
        return tensors, outputs

    def _next_request_id(self) -> str:
        return str(next(self._request_ids))

    def _infer(self, inputs: tuple[Any, ...] | dict[str, Any],
               parameters: dict[str, Any] | None, headers: dict[str, Any] | None) -> Any:
        if self.model_config.decoupled:
            raise PyTritonClientInferenceServerError(
                "Model config is decoupled. Use DecoupledModelClient instead.")
        tensors, outputs = self._create_request(inputs)
        kwargs: dict[str, Any] = {}
        if self._triton_url.scheme == "grpc":
            kwargs["client_timeout"] = self._inference_timeout_s
        try:
            result = self._infer_client.infer(
                self._model_name, tensors, model_version=self._model_version or "",
                outputs=outputs, request_id=self._next_request_id(),
                headers={**(self._headers or {}), **(headers or {})} or None,
                parameters=parameters, **kwargs)
        except InferenceServerException as exc:
            if "Deadline Exceeded" in str(exc.message()):
                raise self._timeout(exc.message()) from exc
            raise PyTritonClientInferenceServerError(
                f"Error occurred during inference request. Message: {exc.message()}") from exc
        except OSError as exc:  # tritonclient.http: a timeout, or the connection lost
            raise self._timeout(exc, after="") from exc
        return outputs_of(result)

    def _timeout(self, message: object, after: str = ".") -> PyTritonClientTimeoutError:
        """PyTriton's words: "s. Message" for a gRPC deadline, "s Message" for a socket's."""
        return PyTritonClientTimeoutError(
            "Timeout occurred during inference request. Timeout: "
            f"{self._inference_timeout_s} s{after} Message: {message}")

    def _debatched(self, result: Any) -> Any:
        return {name: array[0] for name, array in result.items()}


def outputs_of(result: Any) -> dict[str, np.ndarray]:
    """Every output of a tritonclient result (either protocol's), by name, as numpy."""
    response = result.get_response()
    names = ([output["name"] for output in response.get("outputs", [])]
             if isinstance(response, dict) else [output.name for output in response.outputs])
    return {name: result.as_numpy(name) for name in names}


def _datatype(array: np.ndarray) -> str:
    """Triton's datatype of a numpy array (bytes and str arrays are BYTES)."""
    name = _config_type(array.dtype).removeprefix("TYPE_")
    return "BYTES" if name == "STRING" else name

