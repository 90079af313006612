"""Tensors and datatypes: Triton's wire names (FP32), config names (TYPE_FP32) and numpy.

A tensor is a numpy array plus its Triton name, datatype and shape. BYTES tensors are numpy
object arrays of `bytes`; on the wire each element is a 4-byte little-endian length followed by
its bytes, as Triton serialises them.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tritonclient.grpc import model_config_pb2 as mc

from .datatypes import NUMPY_DTYPES
from .errors import Code, TritonError

DATATYPES: frozenset[str] = frozenset(NUMPY_DTYPES)

_CONFIG_TO_WIRE: dict[int, str] = {
    mc.TYPE_BOOL: "BOOL",
    mc.TYPE_UINT8: "UINT8",
    mc.TYPE_UINT16: "UINT16",
    mc.TYPE_UINT32: "UINT32",
    mc.TYPE_UINT64: "UINT64",
    mc.TYPE_INT8: "INT8",
    mc.TYPE_INT16: "INT16",
    mc.TYPE_INT32: "INT32",
    mc.TYPE_INT64: "INT64",
    mc.TYPE_FP16: "FP16",
    mc.TYPE_FP32: "FP32",
    mc.TYPE_FP64: "FP64",
    mc.TYPE_STRING: "BYTES",
    mc.TYPE_BF16: "BF16",
}
_WIRE_TO_CONFIG: dict[str, int] = {v: k for k, v in _CONFIG_TO_WIRE.items()}

_NUMPY_TO_WIRE: dict[np.dtype, str] = {
    dt: name for name, dt in NUMPY_DTYPES.items() if name not in ("BF16",)
}


def wire_datatype(config_type: int) -> str:
    """TYPE_FP32 (config enum value) -> "FP32"; TYPE_INVALID -> "INVALID"."""
    return _CONFIG_TO_WIRE.get(config_type, "INVALID")


def config_datatype(wire: str) -> int:
    """"FP32" -> TYPE_FP32; unknown names -> TYPE_INVALID."""
    return _WIRE_TO_CONFIG.get(wire, mc.TYPE_INVALID)


def numpy_dtype(wire: str) -> np.dtype:
    try:
        return NUMPY_DTYPES[wire]
    except KeyError:
        raise TritonError.invalid_arg(f"invalid datatype '{wire}'") from None


def wire_from_numpy(dtype: np.dtype) -> str:
    dtype = np.dtype(dtype)
    if dtype.kind in ("S", "U", "O"):
        return "BYTES"
    try:
        return _NUMPY_TO_WIRE[dtype]
    except KeyError:
        raise TritonError.invalid_arg(f"numpy dtype {dtype} has no Triton datatype") from None


def element_count(shape: Sequence[int]) -> int:
    """Elements in a tensor of `shape` (exact: dimensions may be huge; [] is a scalar)."""
    return math.prod(shape)


_U32 = struct.Struct("<I")  # a BYTES element's little-endian length prefix
# Elements serialised per join (and put into a decoded array per assignment): b"".join holds an
# 80-byte buffer view for each part it joins, so one join over millions of short elements cost
# many times their own size (a 60 MB tensor of 2-byte strings peaked at 2.1 GB); joined a run
# at a time, that overhead stays a few megabytes.
_SERIALIZE_RUN = 32768


def _element_bytes(item: Any) -> bytes:
    """A BYTES element that is not `bytes` as bytes: text as UTF-8, anything else as its text."""
    if isinstance(item, str):
        return item.encode("utf-8")
    if isinstance(item, (bytes, bytearray, memoryview)):
        return bytes(item)
    return str(item).encode("utf-8")


def serialize_bytes(array: np.ndarray) -> bytes:
    """BYTES tensor -> Triton's length-prefixed wire form (row-major order)."""
    flat = array.reshape(-1)
    if flat.dtype.kind == "S":
        packed = _full_width(flat)
        if packed is not None:
            return packed
    pack = _U32.pack
    out = bytearray()
    for start in range(0, len(flat), _SERIALIZE_RUN):
        parts: list[bytes] = []
        for item in flat[start : start + _SERIALIZE_RUN]:
            if type(item) is not bytes:
                item = _element_bytes(item)
            parts.append(pack(len(item)))
            parts.append(item)
        out += b"".join(parts)
    return bytes(out)


def _full_width(flat: np.ndarray) -> bytes | None:
    """A fixed-width bytes array (numpy 'S') whose every element fills the width, serialised
    by numpy in one pass (7 times the loop's speed: 50 ns an element instead of 350); None for
    any other. numpy reads an element without its trailing NULs, so an element with any is
    shorter than its bytes in the array, and such arrays are left to the loop."""
    width = flat.dtype.itemsize
    if not width or not bool((np.char.str_len(flat) == width).all()):
        return None
    packed = np.empty(len(flat), np.dtype([("length", "<u4"), ("data", f"S{width}")]))
    packed["length"] = width
    packed["data"] = flat
    return packed.tobytes()


# Triton's messages for an input whose data does not fill its shape (`input_data_error`).
BYTE_SIZE_MISMATCH = (
    "input byte size mismatch for input '{name}' for model '{model}'. Expected {expected}, "
    "got {got}"
)
STRING_COUNT_MISMATCH = (
    "expected {expected} string elements for inference input '{name}' for model '{model}', "
    "got {got}"
)
# `got` is the first element too many: Triton stops counting there.
STRING_COUNT_EXCEEDED = (
    "unexpected number of string elements {got} for inference input '{name}' for model "
    "'{model}', expecting {expected}"
)


class InputDataError(TritonError):
    """An input's data does not fill its shape (one of the messages above)."""


def input_data_error(
    template: str, name: str, model: str, expected: int, got: int, prefix: str
) -> TritonError:
    """Triton's INVALID_ARG for an input whose data does not fill its shape, worded by
    `template` (one of the messages above) and started with the request's `prefix`."""
    return InputDataError(
        Code.INVALID_ARG,
        prefix + template.format(name=name, model=model, expected=expected, got=got),
    )


class HeldDataError:
    """Names the input Triton names when several inputs' data do not fill their shapes.

    Triton's core checks the data against the shapes while it iterates the request's inputs in
    its hash map's order, which for a few inputs is the reverse of the request's; the frontends
    here convert in request order, so a data error is held until every input is converted and
    the last one is raised (`check`). Other errors stop the conversion at once, as Triton's
    frontends stop their parse.
    """

    __slots__ = ("error",)

    def __init__(self) -> None:
        self.error: InputDataError | None = None

    def convert(self, convert: Callable[..., np.ndarray], *args: Any) -> np.ndarray | None:
        """`convert(*args)`, or None when it finds the data short or long (held)."""
        try:
            return convert(*args)
        except InputDataError as exc:
            self.error = exc
            return None

    def check(self) -> None:
        if self.error is not None:
            raise self.error


def bytes_from_wire(
    buffer: bytes | memoryview, count: int | None, name: str, model: str, prefix: str
) -> np.ndarray:
    """Length-prefixed BYTES elements -> 1-D object array, checked as Triton checks them.

    The checks and messages are those of Triton's core (InferenceRequest::ValidateBytesInputs)
    and, for a truncated last element, of its backends, so both frontends answer as Triton does.
    `name`/`model` name the input in messages, `prefix` is the request's `log_prefix`; `count`
    None accepts any number of elements.
    """
    # Sliced from bytes, each element is one allocation (a memoryview slice and its copy were
    # two): the loop runs once per element, millions of times for a tensor of short strings.
    data = buffer if type(buffer) is bytes else bytes(buffer)
    items: list[bytes] = []
    append = items.append
    offset, size = 0, len(data)
    limit = size if count is None else count  # size: more elements than that cannot fit
    unpack = _U32.unpack_from
    while size - offset >= 4:
        if len(items) >= limit:
            raise input_data_error(
                STRING_COUNT_EXCEEDED, name, model, limit, len(items) + 1, prefix
            )
        (length,) = unpack(data, offset)
        offset += 4
        end = offset + length
        if end > size:
            # Triton's core counts the truncated element; with the right count the backend
            # then finds the data short.
            if count is not None and len(items) + 1 != count:
                raise input_data_error(
                    STRING_COUNT_MISMATCH, name, model, count, len(items) + 1, prefix
                )
            raise TritonError.invalid_arg(
                f"incomplete string data for inference input '{name}', expecting string of "
                f"length {length} but only {size - offset} bytes available"
            )
        append(data[offset:end])
        offset = end
    if offset != size:
        raise TritonError.invalid_arg(
            f"{prefix}incomplete string length indicator for inference input '{name}' for "
            f"model '{model}', expecting 4 bytes but only {size - offset} bytes available. "
            "Please make sure the string length indicator is in one buffer."
        )
    if count is not None and len(items) != count:
        raise input_data_error(STRING_COUNT_MISMATCH, name, model, count, len(items), prefix)
    # Filled a run at a time: one assignment of millions of elements holds the interpreter lock
    # throughout (0.1-0.2 s for 4 million), which a decode off the event loop must not do.
    out = np.empty(len(items), dtype=np.object_)
    for start in range(0, len(items), _SERIALIZE_RUN):
        out[start : start + _SERIALIZE_RUN] = items[start : start + _SERIALIZE_RUN]
    return out


def input_from_wire(
    buffer: bytes | memoryview,
    datatype: str,
    shape: Sequence[int],
    name: str,
    model: str,
    prefix: str,
) -> np.ndarray:
    """An input's raw bytes (binary HTTP data, gRPC raw_input_contents) -> array of `shape`.

    Fixed-size data becomes a view of `buffer` (no copy); its size, and BYTES elements, are
    checked with Triton's messages (`name`/`model` name the input, `prefix` is the request's
    `log_prefix`).
    """
    count = element_count(shape)
    if datatype == "BYTES":
        flat = bytes_from_wire(buffer, count, name, model, prefix)
    else:
        dtype = numpy_dtype(datatype)
        expected = count * dtype.itemsize
        if len(buffer) != expected:
            raise input_data_error(
                BYTE_SIZE_MISMATCH, name, model, expected, len(buffer), prefix
            )
        # frombuffer holds a buffer export for as long as the array lives: a shared-memory
        # region cannot be unmapped under it (ndarray(buffer=...) would not hold one).
        flat = np.frombuffer(buffer, dtype=dtype)
    if count == 0:
        return empty_input(datatype, shape)
    return flat.reshape(shape)


class WireInput:
    """An input as a kept request template describes it (HTTP and gRPC): its data is read with
    what `input_from_wire` would work out for it every time worked out once."""

    __slots__ = ("name", "datatype", "shape", "_dtype", "_size")

    def __init__(self, name: str, datatype: str, shape: tuple[int, ...]) -> None:
        self.name = name
        self.datatype = datatype
        self.shape = shape
        dtype = NUMPY_DTYPES.get(datatype)
        count = element_count(shape)
        # The byte size whose view is made directly; -1 (never a size) sends BYTES, empty
        # inputs and unknown datatypes through input_from_wire.
        self._dtype = dtype
        self._size = count * dtype.itemsize \
            if dtype is not None and datatype != "BYTES" and count else -1

    def array(self, buffer: bytes | memoryview, model: str, prefix: str) -> np.ndarray:
        """The input's data from `buffer`, checked as `input_from_wire` checks it."""
        if len(buffer) == self._size:
            if type(buffer) is bytes:
                # Immutable, and kept alive by the array: the view is made with its shape at
                # once (a third of frombuffer-then-reshape's cost).
                return np.ndarray(self.shape, self._dtype, buffer)
            return np.frombuffer(buffer, dtype=self._dtype).reshape(self.shape)
        return input_from_wire(buffer, self.datatype, self.shape, self.name, model, prefix)


def empty_input(datatype: str, shape: Sequence[int]) -> np.ndarray:
    """An input of no elements. numpy refuses some such shapes (a dimension beyond what an
    array may hold, beside a 0): that is the client's INVALID_ARG, not a crash."""
    try:
        return np.empty(shape, dtype=numpy_dtype(datatype))
    except (ValueError, MemoryError):
        raise TritonError.invalid_arg(f"invalid shape {list(shape)} for input") from None


def dims_string(shape: Sequence[int]) -> str:
    """A shape as Triton's messages print it: [1,-1,3] (DimsListToString)."""
    return "[" + ",".join(str(d) for d in shape) + "]"


@dataclass(slots=True)
class Tensor:
    """A named tensor as it crosses the server: Triton datatype, shape and data."""

    name: str
    datatype: str
    shape: tuple[int, ...]
    data: np.ndarray
    parameters: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_numpy(cls, name: str, array: np.ndarray, datatype: str | None = None) -> Tensor:
        return cls(name, datatype or wire_from_numpy(array.dtype), tuple(array.shape), array)
