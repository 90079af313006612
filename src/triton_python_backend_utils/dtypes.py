"""Triton datatypes in numpy: config type names ("TYPE_FP32") and TRITONSERVER_DataType codes
(what ``Tensor.triton_dtype()`` returns) to numpy types and back, as Triton's resource file
maps them."""

from __future__ import annotations

from typing import Any

import numpy as np

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
_TYPE_BF16 = 14  # no numpy type: its elements are kept as uint16 (bf16.py)


def triton_to_numpy_type(data_type: int) -> type | None:
    """numpy type of a TRITONSERVER_DataType code, or None."""
    return _NUMPY_OF_TRITON.get(data_type)


def numpy_to_triton_type(data_type: Any) -> int | None:
    """TRITONSERVER_DataType code of a numpy dtype or type, or None."""
    for code, numpy_type in _NUMPY_OF_TRITON.items():
        if data_type == numpy_type:
            return code
    if data_type == np.bytes_:
        return _TYPE_BYTES
    return None


def triton_string_to_numpy(triton_type_string: str) -> type:
    """numpy type of a config data type such as "TYPE_FP32"."""
    return TRITON_STRING_TO_NUMPY[triton_type_string]
