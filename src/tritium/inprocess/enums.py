"""The enumerations of Triton's in-process API, with TRITONSERVER_*'s names and values.

Triton's binding exposes the C API's enums (TRITONSERVER_DataType, TRITONSERVER_MemoryType,
TRITONSERVER_ModelControlMode, ...) under short names; code compares and passes them, so the
members and their integer values carry over unchanged. The mappings between them and Tritium's
own names (wire datatypes "FP32", control modes "explicit") live here too.
"""

from __future__ import annotations

import enum

import numpy as np

from ..datatypes import NUMPY_DTYPES
from .errors import InvalidArgumentError


class DataType(enum.IntEnum):
    INVALID = 0
    BOOL = 1
    UINT8 = 2
    UINT16 = 3
    UINT32 = 4
    UINT64 = 5
    INT8 = 6
    INT16 = 7
    INT32 = 8
    INT64 = 9
    FP16 = 10
    FP32 = 11
    FP64 = 12
    BYTES = 13
    BF16 = 14


class MemoryType(enum.IntEnum):
    CPU = 0
    CPU_PINNED = 1
    GPU = 2


class ModelControlMode(enum.IntEnum):
    NONE = 0
    POLL = 1
    EXPLICIT = 2


class RateLimitMode(enum.IntEnum):
    OFF = 0
    EXEC_COUNT = 1


class LogFormat(enum.IntEnum):
    DEFAULT = 0
    ISO8601 = 1


class MetricFormat(enum.IntEnum):
    PROMETHEUS = 0


class ModelBatchFlag(enum.IntEnum):
    UNKNOWN = 1
    FIRST_DIM = 2


class ModelTxnPropertyFlag(enum.IntEnum):
    ONE_TO_ONE = 1
    DECOUPLED = 2


class InstanceGroupKind(enum.IntEnum):
    AUTO = 0
    CPU = 1
    GPU = 2
    MODEL = 3


class DLDeviceType(enum.IntEnum):
    """The DLPack device types Triton's API names (dlpack.h's DLDeviceType)."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3


# Tritium's control-mode and rate-limit names (tritonserver's flag values).
CONTROL_MODE_NAMES = {
    ModelControlMode.NONE: "none",
    ModelControlMode.POLL: "poll",
    ModelControlMode.EXPLICIT: "explicit",
}
RATE_LIMIT_NAMES = {RateLimitMode.OFF: "off", RateLimitMode.EXEC_COUNT: "execution_count"}


def wire_name(data_type: DataType) -> str:
    """DataType.FP32 -> "FP32" (the protocol's datatype names are the enum's member names)."""
    return data_type.name


def from_wire(name: str) -> DataType:
    return DataType[name] if name in DataType.__members__ else DataType.INVALID


def numpy_type(data_type: DataType) -> np.dtype:
    """The numpy dtype of a DataType (BYTES: object; BF16: its raw uint16 elements)."""
    return NUMPY_DTYPES[data_type.name]


def from_numpy(dtype: np.dtype) -> DataType:
    """numpy dtype -> DataType; strings and objects are BYTES, as in Triton's API."""
    dtype = np.dtype(dtype)
    if dtype.kind in ("S", "U", "O"):
        return DataType.BYTES
    for name, candidate in NUMPY_DTYPES.items():
        if candidate == dtype and name not in ("BF16", "BYTES"):
            return DataType[name]
    raise InvalidArgumentError(f"Numpy data type {dtype} has no Triton server data type")
