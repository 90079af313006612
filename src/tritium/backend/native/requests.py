"""Requests across the C API: InferenceRequest -> TRITONBACKEND_Request, responses back.

A `PendingRequest` is the Python side of one TRITONBACKEND_Request: it keeps the server's
request (whose tensors the C inputs point into) alive until the library reports the last
handle gone (request released, factories and responses deleted). Responses the backend sends
arrive as TRITONBACKEND_Response objects whose outputs the library owns; `read_response`
copies them into the server's tensors before the library frees them.
"""

from __future__ import annotations

import ctypes
import math
import threading
from ctypes import (
    POINTER,
    c_char_p,
    c_double,
    c_int,
    c_int64,
    c_uint32,
    c_uint64,
    c_void_p,
)
from typing import Any

import numpy as np

from ...errors import TritonError
from ...request import RESPONSE_COMPLETE_FINAL, InferenceRequest, InferenceResponse
from ...tensor import Tensor, bytes_from_wire, numpy_dtype, serialize_bytes
from .library import Library, OutputInfo

# TRITONSERVER_DataType values, by index.
DATATYPES = ["INVALID", "BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16",
             "INT32", "INT64", "FP16", "FP32", "FP64", "BYTES", "BF16"]
DATATYPE_NUMBERS = {name: number for number, name in enumerate(DATATYPES)}
# TRITONSERVER_ParameterType
PARAM_STRING, PARAM_INT, PARAM_BOOL, PARAM_DOUBLE = 0, 1, 2, 3


class PendingRequest:
    """One request while the backend holds it, or may still answer it."""

    __slots__ = ("keep", "model_name", "released", "request", "rescheduled", "states", "waiter")

    def __init__(self, request: InferenceRequest, model_name: str) -> None:
        self.request = request
        self.model_name = model_name
        self.keep: list[Any] = []  # buffers the C inputs point into
        self.released = False  # released before its FINAL response
        self.rescheduled = False  # released to run again: this run owes no response
        self.waiter: threading.Event | None = None  # made only when execute must wait
        self.states: list[Tensor] = []  # implicit state from TRITONBACKEND_StateUpdate

    @property
    def completed(self) -> bool:
        sender = self.request.response_sender
        return sender is None or sender.is_completed

    def deliver(self, response: InferenceResponse | None, flags: int) -> None:
        sender = self.request.response_sender
        if sender is None:
            raise TritonError.internal("request was never routed by the server")
        if response is not None and response.error is None:
            wanted = self.request.requested_output_names
            if wanted:  # as Triton, only what the client asked for (state rides along)
                states = {s.name for s in self.states}
                response.outputs = [o for o in response.outputs
                                    if o.name in wanted or o.name in states]
        if self.states and response is not None and response.error is None:
            response.outputs.extend(self.states)
            self.states = []
        sender.send(response, flags)
        if flags & RESPONSE_COMPLETE_FINAL:
            self._wake()

    def wait(self) -> None:
        """Until the final response went out (or the request was abandoned)."""
        waiter = self.waiter = threading.Event()
        if not self.completed:
            waiter.wait()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            waiter.set()

    def gone(self, final_sent: bool) -> None:
        """The library holds no handle of this request any more."""
        if not final_sent and not self.completed and not self.rescheduled:
            self.request.respond_error(TritonError.internal(
                f"backend of model '{self.model_name}' released a request without sending "
                "its final response"
            ))
        self._wake()


def build_request(lib: Library, instance: int, token: int, pending: PendingRequest,
                  all_outputs: list[bytes]) -> int:
    """A TRITONBACKEND_Request for `pending.request` (inputs point at the server's data).

    A client that names no output gets every output of the model, as Triton's core requests
    them all on its behalf (`all_outputs`: the model's output names).
    """
    request = pending.request
    correlation = request.correlation_id
    text_id = correlation.encode() if isinstance(correlation, str) else None
    number_id = correlation if isinstance(correlation, int) else 0
    creq = lib.tritium_request_new(instance, token, request.id.encode(), number_id, text_id,
                                   request.flags, request.timeout_us)
    for name, tensor in request.inputs.items():
        if tensor.datatype == "BYTES":
            data: Any = serialize_bytes(np.asarray(tensor.data))
            address = ctypes.cast(c_char_p(data), c_void_p).value
            size = len(data)
        else:
            data = np.ascontiguousarray(tensor.data)
            address, size = data.__array_interface__["data"][0], data.nbytes
        pending.keep.append(data)
        shape = (c_int64 * len(tensor.shape))(*tensor.shape)
        lib.tritium_request_add_input(creq, name.encode(), DATATYPE_NUMBERS[tensor.datatype],
                                      shape, len(tensor.shape), address, size)
    wanted = [n.encode() for n in request.requested_output_names] or all_outputs
    for output_name in wanted:
        lib.tritium_request_add_output(creq, output_name)
    for key, value in request.parameters.items():
        add_parameter(lib.tritium_request_add_parameter, creq, key, value)
    return creq


def add_parameter(add: Any, target: int, key: str, value: Any) -> None:
    if isinstance(value, bool):
        add(target, key.encode(), PARAM_BOOL, None, int(value), 0.0)
    elif isinstance(value, int):
        add(target, key.encode(), PARAM_INT, None, value, 0.0)
    elif isinstance(value, float):
        add(target, key.encode(), PARAM_DOUBLE, None, 0, value)
    else:
        add(target, key.encode(), PARAM_STRING, str(value).encode(), 0, 0.0)


def tensor_from_buffer(name: str, datatype: int, shape: tuple[int, ...], address: int | None,
                       size: int, model: str) -> Tensor:
    """A server tensor holding a copy of `size` bytes at `address`."""
    wire = DATATYPES[datatype] if 0 < datatype < len(DATATYPES) else "INVALID"
    if wire == "INVALID":
        raise TritonError.invalid_arg(f"output '{name}' has an invalid datatype")
    raw = ctypes.string_at(address, size) if address and size else b""
    count = math.prod(shape)
    if wire == "BYTES":
        array = bytes_from_wire(raw, None, name, model, "").astype(object)
        if array.size != count:
            raise TritonError.invalid_arg(
                f"output '{name}' holds {array.size} BYTES elements, its shape needs {count}")
        return Tensor(name, wire, shape, array.reshape(shape))
    array = np.frombuffer(raw, dtype=numpy_dtype(wire))
    if array.size != count:
        raise TritonError.invalid_arg(
            f"output '{name}' has {size} bytes, its shape {list(shape)} needs "
            f"{count * numpy_dtype(wire).itemsize}")
    return Tensor(name, wire, shape, array.reshape(shape))


_OUTPUTS = 8  # outputs read per call; a response with more takes a second, larger read


def read_response(lib: Library, response: int, model: str) -> InferenceResponse:
    result = InferenceResponse()
    infos = (OutputInfo * _OUTPUTS)()
    count = lib.tritium_response_outputs(response, infos, _OUTPUTS)
    if count > _OUTPUTS:
        infos = (OutputInfo * count)()
        lib.tritium_response_outputs(response, infos, count)
    for info in infos[:count]:
        name = info.name.decode()
        result.outputs.append(tensor_from_buffer(
            name, info.datatype, tuple(info.shape[: info.dims]), info.buffer, info.byte_size,
            model))
        if info.preferred_type != 0:  # not TRITONSERVER_MEMORY_CPU
            if result.preferred_memory is None:
                result.preferred_memory = {}
            result.preferred_memory[name] = (info.preferred_type, info.preferred_id)
    parameters = lib.tritium_response_parameter_count(response)
    if not parameters:
        return result
    name, kind = c_char_p(), c_int()
    text, number, real = c_char_p(), c_int64(), c_double()
    for index in range(parameters):
        lib.tritium_response_parameter(response, index, name, kind, text, number, real)
        result.parameters[(name.value or b"").decode()] = _parameter_value(
            kind.value, text.value, number.value, real.value)
    return result


def read_state(lib: Library, state: int, model: str) -> Tensor:
    name, kind = c_char_p(), c_int()
    shape, dims = POINTER(c_int64)(), c_uint32()
    buffer, size = c_void_p(), c_uint64()
    lib.tritium_state_read(state, name, kind, shape, dims, buffer, size)
    dims_tuple = tuple(shape[i] for i in range(dims.value))
    return tensor_from_buffer((name.value or b"").decode(), kind.value, dims_tuple,
                              buffer.value, size.value, model)


def _parameter_value(kind: int, text: bytes | None, number: int, real: float) -> Any:
    if kind == PARAM_INT:
        return number
    if kind == PARAM_BOOL:
        return bool(number)
    if kind == PARAM_DOUBLE:
        return real
    return (text or b"").decode("utf-8", "replace")
