"""Tensors and datatypes: Triton's wire names (FP32), config names (TYPE_FP32) and numpy.

A tensor is a numpy array plus its Triton name, datatype and shape. BYTES tensors are numpy
object arrays of `bytes`; on the wire each element is a 4-byte little-endian length followed by
its bytes, as Triton serialises them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np
from tritonclient.grpc import model_config_pb2 as mc

from .errors import TritonError

# Wire datatype -> numpy dtype. BF16 has no numpy type: its elements travel as raw uint16.
_NUMPY: dict[str, np.dtype] = {
    "BOOL": np.dtype(np.bool_),
    "UINT8": np.dtype(np.uint8),
    "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32),
    "UINT64": np.dtype(np.uint64),
    "INT8": np.dtype(np.int8),
    "INT16": np.dtype(np.int16),
    "INT32": np.dtype(np.int32),
    "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16),
    "FP32": np.dtype(np.float32),
    "FP64": np.dtype(np.float64),
    "BF16": np.dtype(np.uint16),
    "BYTES": np.dtype(np.object_),
}
DATATYPES: frozenset[str] = frozenset(_NUMPY)

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
    dt: name for name, dt in _NUMPY.items() if name not in ("BF16",)
}


def wire_datatype(config_type: int) -> str:
    """TYPE_FP32 (config enum value) -> "FP32"; TYPE_INVALID -> "INVALID"."""
    return _CONFIG_TO_WIRE.get(config_type, "INVALID")


def config_datatype(wire: str) -> int:
    """"FP32" -> TYPE_FP32; unknown names -> TYPE_INVALID."""
    return _WIRE_TO_CONFIG.get(wire, mc.TYPE_INVALID)


def numpy_dtype(wire: str) -> np.dtype:
    try:
        return _NUMPY[wire]
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
    count = 1
    for dim in shape:
        count *= dim
    return count


def element_size(wire: str) -> int:
    """Bytes per element of a fixed-size datatype (0 for BYTES)."""
    return 0 if wire == "BYTES" else numpy_dtype(wire).itemsize


def serialize_bytes(array: np.ndarray) -> bytes:
    """BYTES tensor -> Triton's length-prefixed wire form (row-major order)."""
    parts: list[bytes] = []
    for item in array.reshape(-1):
        if isinstance(item, str):
            item = item.encode("utf-8")
        elif not isinstance(item, (bytes, bytearray, memoryview)):
            item = str(item).encode("utf-8")
        parts.append(struct.pack("<I", len(item)))
        parts.append(bytes(item))
    return b"".join(parts)


def deserialize_bytes(buffer: bytes | memoryview, count: int | None = None) -> np.ndarray:
    """Triton's length-prefixed wire form -> 1-D object array of `bytes`.

    With `count`, exactly that many elements must fill the buffer exactly; a short or long buffer
    is an INVALID_ARG rather than an IndexError deep in a backend.
    """
    view = memoryview(buffer)
    items: list[bytes] = []
    offset, size = 0, len(view)
    while offset < size:
        if offset + 4 > size:
            raise TritonError.invalid_arg("unexpected end of BYTES tensor data")
        (length,) = struct.unpack_from("<I", view, offset)
        offset += 4
        if offset + length > size:
            raise TritonError.invalid_arg("unexpected end of BYTES tensor data")
        items.append(bytes(view[offset : offset + length]))
        offset += length
    if count is not None and len(items) != count:
        raise TritonError.invalid_arg(
            f"expected {count} BYTES elements, the data holds {len(items)}"
        )
    out = np.empty(len(items), dtype=np.object_)
    out[:] = items
    return out


def bytes_array(values: Iterable[Any], shape: Sequence[int] | None = None) -> np.ndarray:
    """Build a BYTES (object) array from str/bytes values."""
    items = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in values]
    out = np.empty(len(items), dtype=np.object_)
    out[:] = items
    return out.reshape(shape) if shape is not None else out


def to_wire_bytes(wire: str, array: np.ndarray) -> bytes:
    """A tensor's raw wire bytes (row-major, little-endian), for binary HTTP and gRPC raw data."""
    if wire == "BYTES":
        return serialize_bytes(array)
    return np.ascontiguousarray(array, dtype=numpy_dtype(wire)).tobytes()


def from_wire_bytes(wire: str, shape: Sequence[int], buffer: bytes | memoryview) -> np.ndarray:
    """Raw wire bytes -> array of `shape`, checking that the size matches exactly."""
    count = element_count(shape)
    if wire == "BYTES":
        return deserialize_bytes(buffer, count).reshape(shape)
    dtype = numpy_dtype(wire)
    expected = count * dtype.itemsize
    if len(buffer) != expected:
        raise TritonError.invalid_arg(
            f"unexpected total byte size {len(buffer)} for input, expecting {expected}"
        )
    return np.frombuffer(buffer, dtype=dtype).reshape(shape)


@dataclass(slots=True)
class Tensor:
    """A named tensor as it crosses the server: Triton datatype, shape and data."""

    name: str
    datatype: str
    shape: tuple[int, ...]
    data: np.ndarray
    parameters: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_numpy(cls, name: str, array: np.ndarray, datatype: str | None = None) -> "Tensor":
        return cls(name, datatype or wire_from_numpy(array.dtype), tuple(array.shape), array)
