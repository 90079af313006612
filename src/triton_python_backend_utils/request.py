"""``InferenceRequest``: the requests handed to ``execute`` (made by the stub), and the ones a
model makes itself and runs with ``exec``/``async_exec`` (BLS)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import Any

from .constants import TRITONSERVER_REQUEST_RELEASE_ALL, _MemoryType
from .errors import TritonModelException
from .parameters import _parameters_json
from .pybind_args import IncompatibleArguments, as_int, as_str, pybind_constructor
from .response_sender import InferenceResponseSender
from .runtime import _require_runtime
from .tensor import Tensor, _tensor_list


class PreferredMemory:
    """Where a BLS call would like its output tensors (CPU or GPU, and the device id)."""

    def __init__(self, preferred_memory_type: int, preferred_device_id: int = 0) -> None:
        self.preferred_memory_type = _MemoryType(preferred_memory_type)
        self.preferred_device_id = int(preferred_device_id)


class InferenceTrace:
    """The trace a request belongs to (``request.trace()``)."""

    def __init__(self, context: str | None = None) -> None:
        self._context = context
        # The server's handle of the request this is the trace of: a BLS request made with
        # `trace=request.trace()` is traced as that request's child (when it is traced).
        self._request_handle: object = None

    def get_context(self) -> str | None:
        """The trace context as a string, or None when the request is not traced."""
        return self._context


_REQUEST_SIGNATURE = (
    "c_python_backend_utils.InferenceRequest(request_id: str = '', correlation_id: object = 0, "
    "inputs: List[triton::backend::python::PbTensor], requested_output_names: List[str], "
    "model_name: str, model_version: int = -1, flags: int = 0, timeout: int = 0, "
    "preferred_memory: c_python_backend_utils.PreferredMemory = "
    "<c_python_backend_utils.PreferredMemory object>, trace: "
    "c_python_backend_utils.InferenceTrace = <c_python_backend_utils.InferenceTrace object>, "
    "parameters: object = None)"
)


class InferenceRequest:
    """An inference request.

    The model builds one for BLS with Triton's constructor (``model_name``, ``inputs`` and
    ``requested_output_names`` are required) and runs it with ``exec``/``async_exec``. The
    requests handed to ``execute`` are built by the stub with ``_from_server``.
    """

    @pybind_constructor(_REQUEST_SIGNATURE)
    def __init__(
        self,
        request_id: str = "",
        correlation_id: int | str = 0,
        inputs: list[Tensor] | None = None,
        requested_output_names: list[str] | None = None,
        model_name: str | None = None,
        model_version: int = -1,
        flags: int = 0,
        timeout: int = 0,
        preferred_memory: PreferredMemory | None = None,
        trace: InferenceTrace | None = None,
        parameters: dict | None = None,
    ) -> None:
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
            raise IncompatibleArguments()
        # pybind11's casters: the model name may come as bytes or numpy scalars (Triton's BLS
        # examples pass them straight from input tensors), the version as a numpy integer.
        model_name = as_str(model_name)
        model_version = as_int(model_version)
        request_id = as_str(request_id)
        flags, timeout = as_int(flags), as_int(timeout)
        parameters_json = _parameters_json(parameters)
        if correlation_id is None:  # Triton's stub refuses None as pybind11 refuses a type
            raise IncompatibleArguments()
        if not isinstance(correlation_id, (int, str)):
            raise TritonModelException("Correlation ID must be integer or string")
        if not isinstance(requested_output_names, (list, tuple)) or not all(
            isinstance(n, str) for n in requested_output_names
        ):
            raise IncompatibleArguments()
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
        self._handle: object = None
        self._release_flags = TRITONSERVER_REQUEST_RELEASE_ALL
        self._response_sender = InferenceResponseSender(None, None, self._requested_output_names)

    @classmethod
    def _from_server(
        cls,
        handle: object,
        inputs: list[Tensor],
        requested_output_names: Iterable[str],
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
        request._trace = trace = InferenceTrace()
        trace._request_handle = handle
        request._parameters = parameters_json
        request._handle = handle
        request._release_flags = TRITONSERVER_REQUEST_RELEASE_ALL
        request._response_sender = InferenceResponseSender(
            handle, decoupled, request._requested_output_names
        )
        return request

    def inputs(self) -> list[Tensor]:
        return list(self._inputs)

    def request_id(self) -> str:
        return self._request_id

    def correlation_id(self) -> int | str:
        """The correlation ID: an int, or a str for string sequence IDs."""
        return self._correlation_id

    def requested_output_names(self) -> set[str]:
        return set(self._requested_output_names)

    def flags(self) -> int:
        return self._flags

    def set_flags(self, flags: int) -> None:
        self._flags = flags

    def timeout(self) -> int:
        """The request timeout in microseconds (0: none)."""
        return self._timeout

    def parameters(self) -> str:
        """The request parameters as a JSON string."""
        return self._parameters

    def trace(self) -> InferenceTrace:
        return self._trace

    def get_response_sender(self) -> InferenceResponseSender:
        return self._response_sender

    def is_cancelled(self) -> bool:
        return self._response_sender.is_cancelled()

    def set_release_flags(self, flags: int) -> None:
        """TRITONSERVER_REQUEST_RELEASE_RESCHEDULE asks to run this request again."""
        self._release_flags = flags

    def exec(self, decoupled: bool = False) -> Any:
        """Run this request on ``model_name``; a decoupled call returns a response iterator."""
        return _require_runtime().bls_exec(self, decoupled)

    def async_exec(self, decoupled: bool = False) -> Awaitable[Any]:
        """As ``exec``, as an awaitable; call it inside the running event loop."""
        runtime = _require_runtime()
        asyncio.get_running_loop()  # Triton raises "no running event loop" here.
        return runtime.bls_async_exec(self, decoupled)


def get_input_tensor_by_name(inference_request: InferenceRequest, name: str) -> Tensor | None:
    """The request's input Tensor called ``name``, or None."""
    for tensor in inference_request.inputs():
        if tensor.name() == name:
            return tensor
    return None
