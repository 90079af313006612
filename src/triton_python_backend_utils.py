"""Tritium's ``triton_python_backend_utils``: the module Triton Python-backend models import.

Unmodified ``model.py`` files do ``import triton_python_backend_utils as pb_utils``. This module
gives them Triton 2.51's surface: the helpers of Triton's own resource file (BYTES
(de)serialisation, dtype maps, config lookups, ``ModelConfig`` for auto-complete, flag
constants) and the classes Triton's stub exposes through pybind (``Tensor``, ``TritonError``,
``TritonModelException``, ``InferenceRequest``, ``InferenceResponse``,
``InferenceResponseSender``, ``Logger``, ``MetricFamily``, ``PreferredMemory``, model
loading), with Triton's names, defaults and error messages.

Everything that needs the server goes through one runtime object that the stub process
installs; this module never does I/O itself.

Stub-facing API (leading underscore; not part of Triton's API):

* ``_set_runtime(runtime, model_dir=None)`` installs the ``_Runtime`` and the model version
  directory that ``get_model_dir()`` returns.
* ``InferenceRequest._from_server(...)`` builds the requests handed to ``execute``.
* ``InferenceResponseSender._update_state(response, flags)``, ``._is_closed()`` and
  ``._close()``, and ``InferenceResponse._prune_output_tensors(names)``, let the stub treat
  responses returned from ``execute`` the way Triton does.
* The stub may read these attributes directly (their names are part of this contract):
  ``Tensor._name/_dtype/_array``; ``InferenceResponse._output_tensors/_error/_parameters``;
  ``InferenceRequest._inputs/_request_id/_correlation_id/_flags/_timeout/_parameters/
  _requested_output_names/_model_name/_model_version/_preferred_memory/_release_flags``
  (``_release_flags`` holds what the model passed to ``set_release_flags``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import struct
import sys
import threading
from collections.abc import Awaitable, Iterator
from enum import IntEnum
from typing import Protocol

import numpy as np

# --------------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------------

TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
TRITONSERVER_REQUEST_RELEASE_ALL = 1
TRITONSERVER_REQUEST_RELEASE_RESCHEDULE = 2


class _MemoryType(IntEnum):
    TRITONSERVER_MEMORY_GPU = 0
    TRITONSERVER_MEMORY_CPU = 1


TRITONSERVER_MEMORY_GPU = _MemoryType.TRITONSERVER_MEMORY_GPU
TRITONSERVER_MEMORY_CPU = _MemoryType.TRITONSERVER_MEMORY_CPU

# --------------------------------------------------------------------------------------------
# The runtime the stub process installs
# --------------------------------------------------------------------------------------------


class _Runtime(Protocol):
    """What this module needs from the server; the stub process provides it.

    Failures the server reports are raised as ``TritonModelException`` carrying the server's
    words; this module adds Triton's prefixes ("Failed to load model: ", ...). BLS calls report
    server-side failures as an ``InferenceResponse`` carrying a ``TritonError`` (as Triton
    does) and raise only for misuse, e.g. "BLS is only supported during the 'execute'
    function."
    """

    def send_response(
        self, request_handle: object, response: InferenceResponse | None, flags: int
    ) -> None:
        """Deliver one response (or only ``flags``) for the server-made request."""

    def is_cancelled(self, request_handle: object) -> bool:
        """Whether the client cancelled the server-made request."""

    def bls_exec(
        self, request: InferenceRequest, decoupled: bool
    ) -> InferenceResponse | Iterator[InferenceResponse]:
        """Run a model-made request; ``decoupled`` asks for an iterator of responses."""

    def bls_async_exec(
        self, request: InferenceRequest, decoupled: bool
    ) -> Awaitable[InferenceResponse | Iterator[InferenceResponse]]:
        """As ``bls_exec``, awaitable in the caller's running event loop."""

    def log(self, level: int, message: str, filename: str, line: int) -> None:
        """Write a model log line (``level`` is a ``Logger.LogLevel``) to the server log."""

    def metric_family_new(self, name: str, description: str, kind: int) -> object:
        """Create a custom metric family; returns its handle."""

    def metric_new(
        self, family_handle: object, labels: dict, buckets: list[float] | None
    ) -> object:
        """Create a metric of a family; returns its handle."""

    def metric_update(self, metric_handle: object, op: str, value: float) -> None:
        """Apply ``op`` ("increment", "set" or "observe") to a metric."""

    def metric_value(self, metric_handle: object) -> float:
        """Current value of a metric."""

    def metric_family_delete(self, handle: object) -> None:
        """Delete a metric family (its metrics were deleted first)."""

    def metric_delete(self, handle: object) -> None:
        """Delete a metric."""

    def load_model(self, name: str, config: str, files: dict[str, bytes]) -> None:
        """Load (or reload) a model, as TRITONSERVER_ServerLoadModelWithParameters."""

    def unload_model(self, name: str, unload_dependents: bool) -> None:
        """Unload a model, and its dependents if asked."""

    def is_model_ready(self, name: str, version: str) -> bool:
        """Readiness of a model version ("" lets the server choose)."""


_runtime: _Runtime | None = None
_model_dir: str | None = None


def _set_runtime(runtime: _Runtime | None, model_dir: str | None = None) -> None:
    """Install the stub's runtime (None uninstalls it) and the model version directory."""
    global _runtime, _model_dir
    _runtime = runtime
    _model_dir = model_dir


def _require_runtime() -> _Runtime:
    if _runtime is None:
        raise TritonModelException(
            "triton_python_backend_utils is not connected to a server: this call only works "
            "inside a model instance run by the Tritium python backend"
        )
    return _runtime


def _with_prefix(prefix: str, call):
    """Run ``call()``, re-raising its TritonModelException with Triton's prefix."""
    try:
        return call()
    except TritonModelException as e:
        raise TritonModelException(prefix + str(e)) from e


def get_model_dir() -> str:
    """The model version directory (``<repository>/<model>/<version>``), as Triton's stub."""
    if _model_dir is None:
        raise TritonModelException("The model directory is only known inside a model instance.")
    return _model_dir


# --------------------------------------------------------------------------------------------
# Helpers of Triton's resource file
# --------------------------------------------------------------------------------------------

TRITON_STRING_TO_NUMPY = {
    "TYPE_BOOL": bool,
    "TYPE_UINT8": np.uint8,
    "TYPE_UINT16": np.uint16,
    "TYPE_UINT32": np.uint32,
    "TYPE_UINT64": np.uint64,
    "TYPE_INT8": np.int8,
    "TYPE_INT16": np.int16,
    "TYPE_INT32": np.int32,
    "TYPE_INT64": np.int64,
    "TYPE_FP16": np.float16,
    "TYPE_FP32": np.float32,
    "TYPE_FP64": np.float64,
    "TYPE_STRING": np.object_,
}

# TRITONSERVER_DataType codes of the numpy types; BYTES (13) is np.object_.
_NUMPY_OF_TRITON = {
    1: np.bool_,
    2: np.uint8,
    3: np.uint16,
    4: np.uint32,
    5: np.uint64,
    6: np.int8,
    7: np.int16,
    8: np.int32,
    9: np.int64,
    10: np.float16,
    11: np.float32,
    12: np.float64,
    13: np.object_,
}
_TYPE_BYTES = 13


def serialize_byte_tensor(input_tensor):
    """Serialise an object/bytes array into Triton's BYTES wire form (C order).

    Each element becomes a 4-byte little-endian length followed by its bytes; ``bytes``
    elements are taken as they are and anything else as ``str(x)`` in UTF-8. Returns ``()``
    for an empty array and None for other dtypes, as Triton's own helper does.
    """
    if input_tensor.size == 0:
        return ()
    if input_tensor.dtype == np.object_:
        items = [
            x if type(x) is bytes else str(x).encode("utf-8")
            for x in input_tensor.flat
        ]
    elif input_tensor.dtype.type == np.bytes_:
        items = list(input_tensor.flat)
    else:
        return None
    parts = []
    for item in items:
        parts.append(struct.pack("<I", len(item)))
        parts.append(item)
    return b"".join(parts)


def deserialize_bytes_tensor(encoded_tensor):
    """Parse Triton's BYTES wire form into a 1-D object array of ``bytes``."""
    view = memoryview(encoded_tensor).cast("B")
    items = []
    offset = 0
    while offset < len(view):
        (length,) = struct.unpack_from("<I", view, offset)
        offset += 4
        items.append(bytes(view[offset : offset + length]))
        offset += length
    return np.array(items, dtype=np.object_)


def get_input_tensor_by_name(inference_request, name):
    """The request's input Tensor called ``name``, or None."""
    for tensor in inference_request.inputs():
        if tensor.name() == name:
            return tensor
    return None


def get_output_tensor_by_name(inference_response, name):
    """The response's output Tensor called ``name``, or None."""
    for tensor in inference_response.output_tensors():
        if tensor.name() == name:
            return tensor
    return None


def get_input_config_by_name(model_config, name):
    """The ``input`` entry called ``name`` of a model-config dict, or None."""
    for entry in model_config.get("input", ()):
        if entry["name"] == name:
            return entry
    return None


def get_output_config_by_name(model_config, name):
    """The ``output`` entry called ``name`` of a model-config dict, or None."""
    for entry in model_config.get("output", ()):
        if entry["name"] == name:
            return entry
    return None


def using_decoupled_model_transaction_policy(model_config):
    """Whether a model-config dict sets ``model_transaction_policy.decoupled``."""
    if "model_transaction_policy" in model_config:
        return model_config["model_transaction_policy"]["decoupled"]
    return False


def triton_to_numpy_type(data_type):
    """numpy type of a TRITONSERVER_DataType code, or None."""
    return _NUMPY_OF_TRITON.get(data_type)


def numpy_to_triton_type(data_type):
    """TRITONSERVER_DataType code of a numpy dtype or type, or None."""
    for code, numpy_type in _NUMPY_OF_TRITON.items():
        if data_type == numpy_type:
            return code
    if data_type == np.bytes_:
        return _TYPE_BYTES
    return None


def triton_string_to_numpy(triton_type_string):
    """numpy type of a config data type such as "TYPE_FP32"."""
    return TRITON_STRING_TO_NUMPY[triton_type_string]


class ModelConfig:
    """The model configuration handed to ``auto_complete_config``.

    ``model_config`` is the configuration as JSON. Only max_batch_size, dynamic batching,
    inputs, outputs and the transaction policy can be completed, each refusing to contradict
    what the configuration already says.
    """

    def __init__(self, model_config):
        self._model_config = json.loads(model_config)

    def as_dict(self):
        """The configuration as a dict (read it, don't change it)."""
        return self._model_config

    def _name(self):
        return self._model_config["name"]

    def set_max_batch_size(self, max_batch_size):
        """Set max_batch_size; a configured value larger than it is an error."""
        configured = self._model_config["max_batch_size"]
        if configured > max_batch_size:
            raise ValueError(
                f"configuration specified max_batch_size {configured}, but in "
                f"auto-complete-config function for model '{self._name()}' specified "
                f"max_batch_size {max_batch_size}"
            )
        self._model_config["max_batch_size"] = max_batch_size

    def set_dynamic_batching(self):
        """Choose the dynamic batcher unless another scheduler is configured."""
        for scheduler in ("sequence_batching", "ensemble_scheduling"):
            if scheduler in self._model_config:
                raise ValueError(
                    f"Configuration specified scheduling_choice as '{scheduler}', but "
                    f"auto-complete-config function for model '{self._name()}' tries to set "
                    "scheduling_choice as 'dynamic_batching'"
                )
        self._model_config.setdefault("dynamic_batching", {})

    def add_input(self, input):
        """Add an input (name, data_type, dims and optionally optional) or complete one."""
        self._add_tensor("input", input, ("name", "data_type", "dims", "optional"))

    def add_output(self, output):
        """Add an output (name, data_type, dims) or complete the configured one."""
        self._add_tensor("output", output, ("name", "data_type", "dims"))

    def _add_tensor(self, kind, tensor, properties):
        model = self._name()
        for prop in tensor:
            if prop not in properties:
                listed = ", ".join(f"'{p}'" for p in properties[:-1])
                raise ValueError(
                    f"{kind} '{tensor['name']}' in auto-complete-config function for model "
                    f"'{model}' contains property other than {listed} and '{properties[-1]}'."
                )
        if "name" not in tensor:
            raise ValueError(
                f"{kind} in auto-complete-config function for model '{model}' is missing "
                "'name' property."
            )
        for prop in ("data_type", "dims"):
            if prop not in tensor:
                raise ValueError(
                    f"{kind} '{tensor['name']}' in auto-complete-config function for model "
                    f"'{model}' is missing '{prop}' property."
                )
        name = tensor["name"]
        for current in self._model_config[kind]:
            if current["name"] != name:
                continue
            if current["data_type"] not in ("TYPE_INVALID", tensor["data_type"]):
                raise ValueError(
                    f"unable to load model '{model}', configuration expects datatype "
                    f"{current['data_type']} for {kind} '{name}', model provides "
                    f"{tensor['data_type']}"
                )
            if current["dims"] and current["dims"] != tensor["dims"]:
                raise ValueError(
                    f"model '{model}', tensor '{name}': the model expects dims "
                    f"{tensor['dims']} but the model configuration specifies dims "
                    f"{current['dims']}"
                )
            if (
                "optional" in current
                and "optional" in tensor
                and current["optional"] != tensor["optional"]
            ):
                raise ValueError(
                    f"model '{model}', tensor '{name}': the model expects optional "
                    f"{tensor['optional']} but the model configuration specifies optional "
                    f"{current['optional']}"
                )
            current["data_type"] = tensor["data_type"]
            current["dims"] = tensor["dims"]
            if "optional" in tensor:
                current["optional"] = tensor["optional"]
            return
        self._model_config[kind].append(tensor)

    def set_model_transaction_policy(self, transaction_policy_dict):
        """Set ``model_transaction_policy`` (only 'decoupled'), not contradicting the config."""
        model = self._name()
        for prop in transaction_policy_dict:
            if prop != "decoupled":
                raise ValueError(
                    "model transaction property in auto-complete-config function for model "
                    f"'{model}' contains property other than 'decoupled'."
                )
        policy = self._model_config.setdefault("model_transaction_policy", {})
        if "decoupled" in transaction_policy_dict:
            decoupled = transaction_policy_dict["decoupled"]
            if "decoupled" in policy and policy["decoupled"] != decoupled:
                raise ValueError(
                    "trying to change decoupled property in auto-complete-config for model "
                    f"'{model}', which is already set to '{policy['decoupled']}'."
                )
            policy["decoupled"] = decoupled


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class TritonModelException(Exception):
    """Raised by the model (or by this module) for an error Triton reports to the client."""


class _ErrorCode(IntEnum):
    UNKNOWN = 0
    INTERNAL = 1
    NOT_FOUND = 2
    INVALID_ARG = 3
    UNAVAILABLE = 4
    UNSUPPORTED = 5
    ALREADY_EXISTS = 6
    CANCELLED = 7


class TritonError:
    """An error carried by an InferenceResponse: a message and a Triton error code."""

    UNKNOWN = _ErrorCode.UNKNOWN
    INTERNAL = _ErrorCode.INTERNAL
    NOT_FOUND = _ErrorCode.NOT_FOUND
    INVALID_ARG = _ErrorCode.INVALID_ARG
    UNAVAILABLE = _ErrorCode.UNAVAILABLE
    UNSUPPORTED = _ErrorCode.UNSUPPORTED
    ALREADY_EXISTS = _ErrorCode.ALREADY_EXISTS
    CANCELLED = _ErrorCode.CANCELLED

    def __init__(self, message, code=_ErrorCode.INTERNAL):
        if not isinstance(message, str):
            raise TypeError(f"TritonError(): message must be a str, got {type(message)}")
        if code not in _ErrorCode.__members__.values():
            raise TypeError(f"TritonError(): code must be a TritonError code, got {code!r}")
        self._message = message
        self._code = _ErrorCode(code)

    def message(self):
        return self._message

    def code(self):
        return self._code

    def __repr__(self):
        return f"TritonError({self._message!r}, TritonError.{self._code.name})"


def _parameters_json(parameters) -> str:
    """Triton's check and JSON form of request/response ``parameters`` (None means {})."""
    if parameters is None:
        parameters = {}
    elif not isinstance(parameters, dict):
        # Triton's words, including the C++ type name of py::dict.
        raise TritonModelException(f"Expect N8pybind114dictE, got {type(parameters)}")
    for key, value in parameters.items():
        if not isinstance(key, str):
            raise TritonModelException(
                f"Expect parameters keys to have type str, found type {type(key)}"
            )
        if not isinstance(value, (bool, int, str)):
            raise TritonModelException(
                f"Expect parameters values to have type bool/int/str, found type {type(value)}"
            )
    return json.dumps(parameters)


# --------------------------------------------------------------------------------------------
# Tensors
# --------------------------------------------------------------------------------------------

_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST = 1, 2, 3

# TRITONSERVER_DataType of the dtypes a Tensor accepts (native byte order only, as Triton).
_TRITON_OF_DTYPE = {np.dtype(t): code for code, t in _NUMPY_OF_TRITON.items()}


class _DLPackCapsule:
    """Lets np.from_dlpack consume a bare DLPack capsule (numpy checks its real device)."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, **_kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return (_KDL_CPU, 0)


def _is_capsule(obj) -> bool:
    return type(obj).__name__ == "PyCapsule"


class Tensor:
    """A named tensor held as a numpy array; BYTES tensors are object arrays of bytes."""

    def __init__(self, name, numpy_array, /):
        if not isinstance(name, str) or not isinstance(numpy_array, np.ndarray):
            raise TypeError(
                "Tensor(): expected (name: str, numpy_array: numpy.ndarray), got "
                f"({type(name).__name__}, {type(numpy_array).__name__})"
            )
        if name == "":
            raise TritonModelException("Tensor name cannot be an empty string.")
        dtype = _TRITON_OF_DTYPE.get(numpy_array.dtype)
        if dtype is None:
            if numpy_array.dtype.type is not np.bytes_:
                raise TritonModelException("NumPy dtype is not supported.")
            dtype = _TYPE_BYTES
        if not numpy_array.flags.c_contiguous:
            numpy_array = np.ascontiguousarray(numpy_array)
        self._name = name
        self._array = numpy_array
        self._dtype = dtype

    def name(self):
        return self._name

    def as_numpy(self):
        return self._array

    def triton_dtype(self):
        """The TRITONSERVER_DataType code (an int)."""
        return self._dtype

    def shape(self):
        return list(self._array.shape)

    def is_cpu(self):
        return True

    def to_dlpack(self):
        """A DLPack capsule sharing this tensor's memory."""
        return self.__dlpack__()

    def __dlpack__(self, stream=None, **kwargs):
        if self._dtype == _TYPE_BYTES:
            raise TritonModelException("DLPack does not have support for string tensors.")
        array = self._array
        if not array.flags.writeable and "max_version" not in kwargs:
            # A pre-1.0 DLPack capsule cannot mark memory read-only: hand out a copy.
            array = array.copy()
        return array.__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self):
        return (_KDL_CPU, 0)

    @staticmethod
    def from_dlpack(name, tensor):
        """A Tensor sharing the memory of a DLPack capsule or of a ``__dlpack__`` object."""
        if name == "":
            raise TritonModelException("Tensor name cannot be an empty string.")
        if _is_capsule(tensor):
            producer = _DLPackCapsule(tensor)
        elif hasattr(tensor, "__dlpack__") and hasattr(tensor, "__dlpack_device__"):
            device_type = tensor.__dlpack_device__()[0]
            if device_type == _KDL_CUDA:
                raise TritonModelException(
                    "DLPack capsule passed pointer to memory allocated on GPU device, "
                    "          when GPU is not available"
                )
            if device_type not in (_KDL_CPU, _KDL_CUDA_HOST):
                raise TritonModelException(
                    f"DLDevice type {int(device_type)} is not support by Python backend."
                )
            producer = tensor
        else:
            raise TritonModelException(
                "Provided tensor is not supported. Tensor must be a DLPack capsule "
                "        or have `__dlpack__` and `__dlpack_device__` attributes"
            )
        array = np.from_dlpack(producer)
        if not array.flags.c_contiguous:
            raise TritonModelException(
                "DLPack tensor is not contiguous. Only contiguous DLPack tensors that are "
                "stored in C-Order are supported."
            )
        return Tensor(name, array)

    def __repr__(self):
        return f"Tensor({self._name!r}, {self._array!r})"


def _tensor_list(values, owner: str, none_message: str) -> list:
    """Check a list of Tensors as pybind does; a None element gets Triton's message."""
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{owner}: expected a list of Tensor, got {type(values).__name__}")
    for value in values:
        if value is None:
            raise TritonModelException(none_message)
        if not isinstance(value, Tensor):
            raise TypeError(f"{owner}: expected a list of Tensor, found {type(value).__name__}")
    return list(values)


# --------------------------------------------------------------------------------------------
# Responses
# --------------------------------------------------------------------------------------------


class InferenceResponse:
    """The response to one request: output tensors, or an error, and parameters."""

    def __init__(self, output_tensors=(), error=None, parameters=None):
        tensors = _tensor_list(
            output_tensors,
            "InferenceResponse()",
            "Output tensor for inference response should not be empty.",
        )
        if error is not None and not isinstance(error, TritonError):
            raise TypeError(
                f"InferenceResponse(): error must be a TritonError, got {type(error).__name__}"
            )
        self._output_tensors = tensors
        self._error = error
        self._parameters = _parameters_json(parameters)

    def output_tensors(self):
        return list(self._output_tensors)

    def has_error(self):
        return self._error is not None

    def error(self):
        return self._error

    def parameters(self):
        """The response parameters as a JSON string."""
        return self._parameters

    def _prune_output_tensors(self, requested_output_names) -> None:
        """Drop the outputs the request did not ask for (Triton's PruneOutputTensors)."""
        self._output_tensors = [
            t for t in self._output_tensors if t.name() in requested_output_names
        ]


class InferenceResponseSender:
    """Sends the responses of one server-made request (``request.get_response_sender()``)."""

    def __init__(self, handle, decoupled: bool | None, requested_output_names):
        self._handle = handle
        self._decoupled = decoupled
        self._requested_output_names = requested_output_names
        self._lock = threading.Lock()
        self._closed = False
        self._sent = 0

    def send(self, response=None, flags=0):
        """Send ``response`` and/or ``flags`` (TRITONSERVER_RESPONSE_COMPLETE_FINAL ends)."""
        if response is not None and not isinstance(response, InferenceResponse):
            raise TypeError(
                f"send(): response must be an InferenceResponse, got {type(response).__name__}"
            )
        if flags != TRITONSERVER_RESPONSE_COMPLETE_FINAL and flags != 0:
            raise TritonModelException("Unable to send response. Unsupported flag provided.")
        if flags == 0 and response is None:
            raise TritonModelException(
                "Inference Response object must be provided when the response flags is set "
                "to zero."
            )
        runtime = _require_runtime()
        self._update_state(response, flags)
        if response is not None:
            response._prune_output_tensors(self._requested_output_names)
        runtime.send_response(self._handle, response, flags)

    def is_cancelled(self):
        if self._handle is None:
            return False
        return _require_runtime().is_cancelled(self._handle)

    def _update_state(self, response, flags) -> None:
        """Count a response and close on FINAL, refusing what Triton refuses."""
        if self._decoupled is None:
            raise TritonModelException(
                "Unable to send response. Response sender has no reference to the decoupled "
                "state of the model."
            )
        with self._lock:
            if not self._decoupled:
                if response is not None and self._sent > 0:
                    raise TritonModelException(
                        "Unable to send response. Non-decoupled model cannot send more than "
                        "one response."
                    )
                if (
                    response is None
                    and flags == TRITONSERVER_RESPONSE_COMPLETE_FINAL
                    and self._sent == 0
                ):
                    raise TritonModelException(
                        "Unable to send response. Non-decoupled model cannot send complete "
                        "final before sending a response."
                    )
            if self._closed:
                raise TritonModelException(
                    "Unable to send response. Response sender has been closed."
                )
            if flags == TRITONSERVER_RESPONSE_COMPLETE_FINAL:
                self._closed = True
            self._sent += 1

    def _is_closed(self) -> bool:
        with self._lock:
            return self._closed

    def _close(self) -> None:
        with self._lock:
            self._closed = True


# --------------------------------------------------------------------------------------------
# Requests
# --------------------------------------------------------------------------------------------


class PreferredMemory:
    """Where a BLS call would like its output tensors (CPU or GPU, and the device id)."""

    def __init__(self, preferred_memory_type, preferred_device_id=0):
        self.preferred_memory_type = _MemoryType(preferred_memory_type)
        self.preferred_device_id = int(preferred_device_id)


class InferenceTrace:
    """The trace a request belongs to (``request.trace()``)."""

    def __init__(self, context: str | None = None):
        self._context = context

    def get_context(self):
        """The trace context as a string, or None when the request is not traced."""
        return self._context


class InferenceRequest:
    """An inference request.

    The model builds one for BLS with Triton's constructor (``model_name``, ``inputs`` and
    ``requested_output_names`` are required) and runs it with ``exec``/``async_exec``. The
    requests handed to ``execute`` are built by the stub with ``_from_server``.
    """

    def __init__(
        self,
        request_id="",
        correlation_id=0,
        inputs=None,
        requested_output_names=None,
        model_name=None,
        model_version=-1,
        flags=0,
        timeout=0,
        preferred_memory=None,
        trace=None,
        parameters=None,
    ):
        missing = [
            arg
            for arg, value in (
                ("inputs", inputs),
                ("requested_output_names", requested_output_names),
                ("model_name", model_name),
            )
            if value is None
        ]
        if missing:
            raise TypeError(f"InferenceRequest(): missing required argument(s) {missing}")
        parameters_json = _parameters_json(parameters)
        if not isinstance(correlation_id, (int, str)):
            raise TritonModelException("Correlation ID must be integer or string")
        if not isinstance(requested_output_names, (list, tuple)) or not all(
            isinstance(n, str) for n in requested_output_names
        ):
            raise TypeError("InferenceRequest(): requested_output_names must be a list of str")
        inputs = _tensor_list(
            inputs,
            "InferenceRequest()",
            f"Input tensor for request with id '{request_id}' and model name '{model_name}' "
            "should not be empty.",
        )
        if "" in requested_output_names:
            raise TritonModelException(
                f"Requested output name for request with id '{request_id}' and model name "
                f"'{model_name}' should not be empty."
            )
        self._request_id = request_id
        self._correlation_id = correlation_id
        self._inputs = inputs
        self._requested_output_names = set(requested_output_names)
        self._model_name = model_name
        self._model_version = model_version
        self._flags = flags
        self._timeout = timeout
        self._preferred_memory = preferred_memory
        self._trace = trace if trace is not None else InferenceTrace()
        self._parameters = parameters_json
        self._handle = None
        self._release_flags = TRITONSERVER_REQUEST_RELEASE_ALL
        self._response_sender = InferenceResponseSender(None, None, self._requested_output_names)

    @classmethod
    def _from_server(
        cls,
        handle: object,
        inputs: list[Tensor],
        requested_output_names,
        request_id: str,
        correlation_id: int | str,
        flags: int,
        timeout_us: int,
        parameters_json: str,
        decoupled: bool,
    ) -> InferenceRequest:
        """Build a request handed to ``execute`` (stub only; nothing is validated).

        ``handle`` is the stub's own token, given back to ``_Runtime.send_response`` and
        ``_Runtime.is_cancelled``. ``requested_output_names`` must be the effective set: every
        model output when the client named none, since responses are pruned to it.
        ``parameters_json`` is the request parameters as JSON (Triton writes it compact,
        e.g. '{"k":"v","n":3}'). ``decoupled`` is the model's transaction policy; it decides
        what the response sender accepts.
        """
        request = cls.__new__(cls)
        request._request_id = request_id
        request._correlation_id = correlation_id
        request._inputs = list(inputs)
        request._requested_output_names = set(requested_output_names)
        request._model_name = ""
        request._model_version = -1
        request._flags = flags
        request._timeout = timeout_us
        request._preferred_memory = None
        request._trace = InferenceTrace()
        request._parameters = parameters_json
        request._handle = handle
        request._release_flags = TRITONSERVER_REQUEST_RELEASE_ALL
        request._response_sender = InferenceResponseSender(
            handle, decoupled, request._requested_output_names
        )
        return request

    def inputs(self):
        return list(self._inputs)

    def request_id(self):
        return self._request_id

    def correlation_id(self):
        """The correlation ID: an int, or a str for string sequence IDs."""
        return self._correlation_id

    def requested_output_names(self):
        return set(self._requested_output_names)

    def flags(self):
        return self._flags

    def set_flags(self, flags):
        self._flags = flags

    def timeout(self):
        """The request timeout in microseconds (0: none)."""
        return self._timeout

    def parameters(self):
        """The request parameters as a JSON string."""
        return self._parameters

    def trace(self):
        return self._trace

    def get_response_sender(self):
        return self._response_sender

    def is_cancelled(self):
        return self._response_sender.is_cancelled()

    def set_release_flags(self, flags):
        """TRITONSERVER_REQUEST_RELEASE_RESCHEDULE asks to run this request again."""
        self._release_flags = flags

    def exec(self, decoupled=False):
        """Run this request on ``model_name``; a decoupled call returns a response iterator."""
        return _require_runtime().bls_exec(self, decoupled)

    def async_exec(self, decoupled=False):
        """As ``exec``, as an awaitable; call it inside the running event loop."""
        runtime = _require_runtime()
        asyncio.get_running_loop()  # Triton raises "no running event loop" here.
        return runtime.bls_async_exec(self, decoupled)


# --------------------------------------------------------------------------------------------
# Logging
# --------------------------------------------------------------------------------------------

_fallback_log = logging.getLogger("triton_python_backend_utils")


def _caller_location() -> tuple[str, int]:
    """File and line of the model code that called the Logger."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    if frame is None:
        return "<unknown>", 0
    return frame.f_code.co_filename, frame.f_lineno


class Logger:
    """Writes model log lines into the server log, tagged with the caller's file and line."""

    class LogLevel(IntEnum):
        INFO = 0
        WARNING = 1
        ERROR = 2
        VERBOSE = 3

    INFO = LogLevel.INFO
    WARNING = LogLevel.WARNING
    ERROR = LogLevel.ERROR
    VERBOSE = LogLevel.VERBOSE

    _PYTHON_LEVELS = {
        LogLevel.INFO: logging.INFO,
        LogLevel.WARNING: logging.WARNING,
        LogLevel.ERROR: logging.ERROR,
        LogLevel.VERBOSE: logging.DEBUG,
    }

    @staticmethod
    def log(message, level=LogLevel.INFO):
        level = Logger.LogLevel(level)
        filename, line = _caller_location()
        if _runtime is None:
            _fallback_log.log(Logger._PYTHON_LEVELS[level], "%s:%d] %s", filename, line, message)
        else:
            _runtime.log(int(level), message, filename, line)

    @staticmethod
    def log_info(message):
        Logger.log(message, Logger.LogLevel.INFO)

    @staticmethod
    def log_warn(message):
        Logger.log(message, Logger.LogLevel.WARNING)

    @staticmethod
    def log_error(message):
        Logger.log(message, Logger.LogLevel.ERROR)

    @staticmethod
    def log_verbose(message):
        Logger.log(message, Logger.LogLevel.VERBOSE)


# --------------------------------------------------------------------------------------------
# Custom metrics
# --------------------------------------------------------------------------------------------


class _MetricKind(IntEnum):
    COUNTER = 0
    GAUGE = 1
    HISTOGRAM = 2


class Metric:
    """One labelled metric of a MetricFamily (made by ``MetricFamily.Metric``)."""

    def __init__(self, handle):
        self._handle = handle
        self._cleared = False

    def _live_runtime(self) -> _Runtime:
        if self._cleared:
            raise TritonModelException(
                "Invalid metric operation as the corresponding 'MetricFamily' has been "
                "deleted. The 'MetricFamily' object should be deleted AFTER its "
                "corresponding 'Metric' objects have been deleted."
            )
        return _require_runtime()

    def _update(self, prefix: str, op: str, value) -> None:
        value = float(value)
        _with_prefix(prefix, lambda: self._live_runtime().metric_update(self._handle, op, value))

    def increment(self, value):
        self._update("Failed to increment metric value: ", "increment", value)

    def set(self, value):
        self._update("Failed to set metric value: ", "set", value)

    def observe(self, value):
        self._update("Failed to observe metric value: ", "observe", value)

    def value(self):
        return _with_prefix(
            "Failed to get metric value: ",
            lambda: self._live_runtime().metric_value(self._handle),
        )

    def _clear(self) -> None:
        if not self._cleared:
            self._cleared = True
            _require_runtime().metric_delete(self._handle)


class MetricFamily:
    """A custom metric family; deleting it deletes its metrics (Triton's lifetime rules)."""

    COUNTER = _MetricKind.COUNTER
    GAUGE = _MetricKind.GAUGE
    HISTOGRAM = _MetricKind.HISTOGRAM

    def __init__(self, name, description, kind):
        if (
            not isinstance(name, str)
            or not isinstance(description, str)
            or not isinstance(kind, _MetricKind)
        ):
            raise TypeError(
                "MetricFamily(): expected (name: str, description: str, kind: "
                "MetricFamily.COUNTER | MetricFamily.GAUGE | MetricFamily.HISTOGRAM)"
            )
        self._handle = _with_prefix(
            "Error when creating MetricFamily: ",
            lambda: _require_runtime().metric_family_new(name, description, int(kind)),
        )
        self._kind = kind
        self._metrics: list[Metric] = []

    def Metric(self, labels=None, buckets=None):
        """A metric of this family with the given labels (and buckets for a histogram)."""
        if labels is not None and not isinstance(labels, dict):
            raise TritonModelException("Failed to create metric. Labels must be a dictionary.")
        if buckets is not None:
            if not isinstance(buckets, list):
                raise TritonModelException("Failed to create metric. Buckets must be a list.")
            if self._kind != _MetricKind.HISTOGRAM:
                raise TritonModelException("Failed to create metric. Unexpected buckets found.")
            buckets = [float(b) for b in buckets]
        elif self._kind == _MetricKind.HISTOGRAM:
            raise TritonModelException("Failed to create metric. Missing required buckets.")
        handle = _with_prefix(
            "Error when creating Metric: ",
            lambda: _require_runtime().metric_new(self._handle, labels or {}, buckets),
        )
        metric = Metric(handle)
        self._metrics.append(metric)
        return metric

    def __del__(self):
        if not hasattr(self, "_metrics"):
            return  # __init__ failed: nothing was created.
        for metric in self._metrics:
            try:
                metric._clear()
            except Exception as e:
                print(f"Error when deleting Metric: {e}", file=sys.stderr)
        try:
            _require_runtime().metric_family_delete(self._handle)
        except Exception as e:
            print(f"Error when deleting MetricFamily: {e}", file=sys.stderr)


# --------------------------------------------------------------------------------------------
# Model loading
# --------------------------------------------------------------------------------------------


def load_model(model_name, config="", files=None):
    """Load a model; ``config`` overrides its configuration (JSON), ``files`` its directory.

    ``files`` maps "file:<path in the model directory>" to the file content as bytes.
    """
    _with_prefix(
        "Failed to load model: ",
        lambda: _require_runtime().load_model(model_name, config, dict(files or {})),
    )


def unload_model(model_name, unload_dependents=False):
    """Unload a model, and the models that depend on it if ``unload_dependents``."""
    _with_prefix(
        "Failed to unload model: ",
        lambda: _require_runtime().unload_model(model_name, unload_dependents),
    )


def is_model_ready(model_name, model_version=""):
    """Whether a model version is ready ("" lets the server choose the version)."""
    return _with_prefix(
        "Failed to check model readiness: ",
        lambda: _require_runtime().is_model_ready(model_name, model_version),
    )
