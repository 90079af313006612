"""The driver half of the fake binding (see the package's docstring)."""

from __future__ import annotations

import enum

from . import runtime


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_NOT_FOUND = 500


def cuGetErrorString(error: CUresult) -> tuple[CUresult, bytes]:
    return CUresult.CUDA_SUCCESS, {CUresult.CUDA_SUCCESS: b"no error",
                                   CUresult.CUDA_ERROR_NOT_FOUND: b"named symbol not found"}[error]


def cuMemGetAddressRange(pointer: int) -> tuple[CUresult, int, int]:
    for base, entry in list(runtime.opened.items()):
        if base <= pointer < base + len(entry.mapping):
            return CUresult.CUDA_SUCCESS, base, len(entry.mapping)
    return CUresult.CUDA_ERROR_NOT_FOUND, 0, 0
