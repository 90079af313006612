"""Tensor data in JSON form (an input's or output's `data` member) <-> numpy arrays.

Triton reads each element with the rapidjson accessor of the tensor's datatype family (every
number through double for FP32/FP64, signed through int64, unsigned through uint64) and accepts
any nesting of lists whose leaves fill the shape; the checks and messages here are those.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable
from typing import Any

import numpy as np

from ...errors import TritonError
from ...tensor import (
    STRING_COUNT_EXCEEDED,
    STRING_COUNT_MISMATCH,
    element_count,
    empty_input,
    input_data_error,
    numpy_dtype,
)
from ..extensions.json_codec import (
    NOT_ARRAY,
    NOT_BOOL,
    NOT_DOUBLE,
    NOT_INT,
    NOT_STRING,
    NOT_UINT,
    dumps,
    parse_error,
    utf8,
)
from .json_spans import JsonSpan, leaves

# An output of at least this many elements is written as JSON a slice of this many at a time.
LARGE_OUTPUT = 1 << 16

# Datatype -> the family of JSON values it is read from.
_FAMILY: dict[str, str] = {
    "BOOL": "bool",
    "UINT8": "uint", "UINT16": "uint", "UINT32": "uint", "UINT64": "uint",
    "INT8": "int", "INT16": "int", "INT32": "int", "INT64": "int",
    "FP32": "float", "FP64": "float",
    "BYTES": "bytes",
}
# Family -> (the Python types its leaves may have, the accessor's failure, the type read into).
_READ: dict[str, tuple[frozenset[type], str, Any]] = {
    "bool": (frozenset((bool,)), NOT_BOOL, np.bool_),
    "uint": (frozenset((int,)), NOT_UINT, np.uint64),
    "int": (frozenset((int,)), NOT_INT, np.int64),
    "float": (frozenset((int, float)), NOT_DOUBLE, np.float64),
    "bytes": (frozenset((str,)), NOT_STRING, np.object_),
}

_SHAPE_MISMATCH = "Unable to parse 'data': Shape does not match true shape of 'data' field"


def array_from_json(
    name: str,
    datatype: str,
    shape: tuple[int, ...],
    data: Any,
    model_name: str,
    prefix: str,
) -> np.ndarray:
    """An input's JSON `data` -> array of `shape` (`prefix` is the request's `log_prefix`)."""
    count = element_count(shape)
    if count == 0:
        return empty_input(datatype, shape)
    if type(data) is not list and type(data) is not JsonSpan:
        raise parse_error("data", NOT_ARRAY)
    if datatype == "FP16" or datatype == "BF16":
        raise TritonError.invalid_arg(
            f"receiving {datatype} data via JSON is not supported. Please use the binary data "
            f"format for input {name}"
        )
    family = _FAMILY.get(datatype)
    if family is None:
        raise TritonError.invalid_arg(f"invalid datatype for input {name}")
    if isinstance(data, JsonSpan):
        if family == "bytes":
            return _read_strings(data.slices(), name, count, model_name, prefix).reshape(shape)
        return _read_span(data, family, count, numpy_dtype(datatype)).reshape(shape)
    flat, types = leaves(data)
    _check_types(types, family)

    if family == "bytes":
        return _read_strings([flat], name, count, model_name, prefix).reshape(shape)

    if len(flat) != count:
        raise TritonError.invalid_arg(_SHAPE_MISMATCH)
    return _narrow(_read(flat, family), datatype, family).reshape(shape)


def _read_strings(slices: Iterable[list[Any]], name: str, count: int, model_name: str,
                  prefix: str) -> np.ndarray:
    """A BYTES input's strings (its leaves, a slice at a time) as UTF-8 bytes. Every slice is
    read before a count that does not fill the shape is refused, so that a wrong type
    anywhere is refused first, as when the leaves are checked together."""
    out = np.empty(count, dtype=np.object_)
    filled = 0
    for flat in slices:
        _check_types(set(map(type, flat)), "bytes")
        room = max(0, min(len(flat), count - filled))
        out[filled:filled + room] = [utf8(s) for s in (flat if room == len(flat) else flat[:room])]
        filled += len(flat)
    if filled > count:
        raise input_data_error(STRING_COUNT_EXCEEDED, name, model_name, count, count + 1, prefix)
    if filled < count:
        raise input_data_error(STRING_COUNT_MISMATCH, name, model_name, count, filled, prefix)
    return out


def _check_types(types: set[type], family: str) -> None:
    if not types <= _READ[family][0]:
        if family == "bytes":
            raise TritonError.invalid_arg(f"Unable to parse JSON bytes array: {NOT_STRING}")
        raise parse_error("data", _READ[family][1])


def _read(flat: list[Any], family: str) -> np.ndarray:
    """Leaves -> the family's array (double, int64, uint64 or bool)."""
    try:
        return np.array(flat, dtype=_READ[family][2])
    except OverflowError:
        raise parse_error("data", _READ[family][1]) from None


def _read_span(span: JsonSpan, family: str, count: int, target: np.dtype) -> np.ndarray:
    """A large numeric array's leaves, read a slice at a time into the tensor (neither a list
    of all of them nor a wide copy is ever built). Its text holds no strings: BYTES data there
    is refused."""
    out = np.empty(count, dtype=target)
    filled = 0
    for values in span.slices():
        _check_types(set(map(type, values)), family)
        if filled + len(values) > count:
            raise TritonError.invalid_arg(_SHAPE_MISMATCH)
        with np.errstate(over="ignore"):  # narrowed as `_narrow` does
            out[filled:filled + len(values)] = _read(values, family)
        filled += len(values)
    if filled != count:
        raise TritonError.invalid_arg(_SHAPE_MISMATCH)
    return out


def _narrow(array: np.ndarray, datatype: str, family: str) -> np.ndarray:
    target = numpy_dtype(datatype)
    if target != array.dtype:
        if family == "float":  # narrowed from double, as Triton does
            with np.errstate(over="ignore"):
                array = array.astype(target)
        else:
            array = array.astype(target)  # wraps like Triton's C cast
    return array


def json_text_in_slices(datatype: str, array: Any) -> bytes:
    """An output's elements as the JSON text json_from_array's list is written as, made a
    slice of `LARGE_OUTPUT` elements at a time: each slice holds the GIL for milliseconds (two
    million elements in one tolist and one dumps held it for half a second), and the GIL
    changes hands between slices."""
    flat = np.asarray(array).reshape(-1)
    parts = []
    for start in range(0, flat.size, LARGE_OUTPUT):
        parts.append(dumps(json_from_array(datatype, flat[start:start + LARGE_OUTPUT]))[1:-1])
        time.sleep(0)
    return b"[" + b",".join(parts) + b"]"


class JsonSplice:
    """A document whose large arrays are written apart (`json_text_in_slices`) and put in
    place once it is written: each stands in it as a placeholder string holding a token no
    client can guess (a request id or a parameter may hold any text), and the pieces are
    joined once."""

    __slots__ = ("_token", "_texts")

    def __init__(self) -> None:
        self._token = ""  # made with the first placeholder (most documents have none)
        self._texts: list[bytes] = []

    def placeholder(self, text: bytes) -> str:
        """Where `text` (JSON) goes in the document."""
        if not self._token:
            self._token = f"\x01tritium-{secrets.token_hex(8)}:"
        self._texts.append(text)
        return f"{self._token}{len(self._texts) - 1}"

    def dumps(self, document: Any) -> bytes:
        """The document as `dumps` writes it, each placeholder replaced by its text."""
        body = dumps(document)
        if not self._texts:
            return body
        markers = [dumps(f"{self._token}{index}") for index in range(len(self._texts))]
        parts: list[bytes] = []
        position = 0
        for at, index in sorted((body.index(marker), index)
                                for index, marker in enumerate(markers)):
            parts += (body[position:at], self._texts[index])
            position = at + len(markers[index])
        parts.append(body[position:])
        return b"".join(parts)


def json_from_array(datatype: str, array: Any) -> list[Any]:
    """An output's elements as a flat JSON list (row-major), as Triton writes `data`."""
    if datatype == "FP16" or datatype == "BF16":
        raise TritonError.invalid_arg(
            f"sending {datatype} data via JSON is not supported. Please use the binary data "
            "format for output"
        )
    array = np.asarray(array).reshape(-1)
    if datatype == "BYTES":
        return [
            item.decode("utf-8", "surrogateescape")
            if isinstance(item, (bytes, bytearray))
            else (bytes(item).decode("utf-8", "surrogateescape")
                  if isinstance(item, memoryview) else str(item))
            for item in array.tolist()
        ]
    dtype = numpy_dtype(datatype)
    if array.dtype != dtype:
        array = array.astype(dtype)
    return array.tolist()
