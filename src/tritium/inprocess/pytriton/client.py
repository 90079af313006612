"""PyTriton's ModelClient: numpy in, numpy out, over the real tritonclient (HTTP or gRPC).

`ModelClient("localhost:8000", "add")` (HTTP unless the URL says grpc://; ports default to 8000
and 8001 as in PyTriton). `infer_batch(**inputs)` sends whole batches, `infer_sample(**inputs)`
one sample (a batch dimension added, then taken off the outputs); inputs may also be given
positionally, in the model's input order. Datatypes are the model's.
"""

from __future__ import annotations

import time
import urllib.parse
from typing import Any

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from ...datatypes import NUMPY_DTYPES


class PyTritonClientTimeoutError(TimeoutError):
    """The model was not ready within init_timeout_s."""


class ModelClient:
    def __init__(self, url: str, model_name: str, model_version: str | None = None, *,
                 lazy_init: bool = True, init_timeout_s: float | None = None,
                 inference_timeout_s: float | None = None,
                 access_token: str | None = None) -> None:
        parsed = urllib.parse.urlparse(url if "://" in url else f"http://{url}")
        if parsed.scheme not in ("http", "grpc"):
            raise ValueError(f"Invalid scheme {parsed.scheme}. Only grpc and http are supported.")
        port = parsed.port or (8001 if parsed.scheme == "grpc" else 8000)
        self._module: Any = grpcclient if parsed.scheme == "grpc" else httpclient
        self._client = self._module.InferenceServerClient(f"{parsed.hostname}:{port}")
        self.model_name = model_name
        self.model_version = model_version or ""
        self._init_timeout_s = init_timeout_s if init_timeout_s is not None else 300.0
        self._inference_timeout_s = inference_timeout_s
        # PyTriton 0.7's token for restricted endpoints, sent with every call.
        self._headers: dict[str, str] = {}
        if access_token is not None:
            prefix = "triton-grpc-protocol-" if parsed.scheme == "grpc" else ""
            self._headers[f"{prefix}triton-access-token"] = access_token
        self._inputs: list[dict[str, Any]] | None = None
        self._outputs: list[str] = []
        if not lazy_init:
            self._initialize()

    def __enter__(self) -> ModelClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    def wait_for_model(self, timeout_s: float) -> None:
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

    def _initialize(self) -> None:
        self.wait_for_model(self._init_timeout_s)
        metadata = self._client.get_model_metadata(self.model_name, self.model_version,
                                                   headers=self._headers)
        if not isinstance(metadata, dict):  # gRPC answers in protobuf messages
            metadata = {"inputs": [{"name": t.name, "datatype": t.datatype}
                                   for t in metadata.inputs],
                        "outputs": [{"name": t.name} for t in metadata.outputs]}
        self._inputs = metadata["inputs"]
        self._outputs = [t["name"] for t in metadata["outputs"]]

    def infer_batch(self, *inputs: np.ndarray, parameters: dict[str, Any] | None = None,
                    headers: dict[str, str] | None = None,
                    **named_inputs: np.ndarray) -> dict[str, np.ndarray]:
        if self._inputs is None:
            self._initialize()
        assert self._inputs is not None
        if inputs and named_inputs:
            raise ValueError("Use either positional or named inputs, not both")
        if inputs:
            pairs = zip(self._inputs, inputs, strict=False)
            named_inputs = {spec["name"]: value for spec, value in pairs}
        datatypes = {spec["name"]: spec["datatype"] for spec in self._inputs}
        tensors = []
        for name, value in named_inputs.items():
            if name not in datatypes:
                raise ValueError(f"model {self.model_name} has no input {name}")
            datatype = datatypes[name]
            array = np.asarray(value)
            if datatype != "BYTES":
                array = array.astype(NUMPY_DTYPES[datatype], copy=False)
            else:
                array = array.astype(np.object_)
            tensor = self._module.InferInput(name, list(array.shape), datatype)
            tensor.set_data_from_numpy(array)
            tensors.append(tensor)
        kwargs: dict[str, Any] = {"model_version": self.model_version,
                                  "headers": {**self._headers, **(headers or {})},
                                  "parameters": parameters}
        if self._inference_timeout_s is not None and self._module is grpcclient:
            kwargs["client_timeout"] = self._inference_timeout_s
        result = self._client.infer(self.model_name, tensors, **kwargs)
        found = {}
        for name in self._outputs:
            array = result.as_numpy(name)
            if array is not None:
                found[name] = array
        return found

    def infer_sample(self, *inputs: np.ndarray, parameters: dict[str, Any] | None = None,
                     headers: dict[str, str] | None = None,
                     **named_inputs: np.ndarray) -> dict[str, np.ndarray]:
        batched = [np.asarray(v)[np.newaxis, ...] for v in inputs]
        named = {k: np.asarray(v)[np.newaxis, ...] for k, v in named_inputs.items()}
        outputs = self.infer_batch(*batched, parameters=parameters, headers=headers, **named)
        return {name: array[0] for name, array in outputs.items()}
