"""BF16 tensors, which numpy cannot hold: a Tensor keeps their elements as uint16 and, as in
Triton's pb_utils, hands them out and takes them in only through DLPack. The DLPack side is
PyTorch's (the framework that makes BF16 tensors), imported only for a BF16 tensor.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from .errors import TritonModelException

_KDL_BFLOAT = 4  # DLDataTypeCode kDLBfloat
_DTYPE_OFFSET = 20  # of DLTensor.dtype in a DLManagedTensor (after data, device and ndim)

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype = ctypes.c_int
_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise TritonModelException(
            "BF16 tensors go through DLPack with PyTorch: install torch in the model's "
            "environment") from None
    return torch


def is_bf16(obj: Any) -> bool:
    """Whether `obj` (a DLPack capsule, or an object with __dlpack__) holds bfloat16."""
    if type(obj).__name__ == "PyCapsule":
        if not _is_valid(obj, b"dltensor"):  # used already, or a versioned one
            return False
        pointer = _get_pointer(obj, b"dltensor")
        code, bits = ctypes.string_at(pointer + _DTYPE_OFFSET, 2)
        return code == _KDL_BFLOAT and bits == 16
    return str(getattr(obj, "dtype", "")) in ("torch.bfloat16", "bfloat16")


def from_dlpack(obj: Any) -> np.ndarray:
    """A BF16 DLPack tensor's elements, as uint16 in host memory."""
    torch = _torch()
    tensor = (torch.utils.dlpack.from_dlpack(obj) if type(obj).__name__ == "PyCapsule"
              else torch.from_dlpack(obj))
    return tensor.cpu().contiguous().view(torch.int16).numpy().view(np.uint16)


def to_dlpack(array: np.ndarray) -> object:
    """A DLPack capsule of bfloat16 over `array`'s uint16 elements."""
    torch = _torch()
    if not array.flags.writeable:  # torch shares only writable memory
        array = array.copy()
    return torch.utils.dlpack.to_dlpack(torch.from_numpy(array.view(np.int16)).view(torch.bfloat16))
