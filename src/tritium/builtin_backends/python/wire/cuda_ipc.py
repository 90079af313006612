"""A GPU tensor crossing from one stub to another by CUDA IPC (a BLS input whose callee takes
GPU inputs): what the server carries in the request's input instead of host memory.

`CudaIpcArray` is only a description: the IPC handle of the allocation holding the tensor,
where in it the tensor starts, its device, dtype and shape. It opens nothing (the stubs do, in
`stub/cuda_ipc.py`) and answers only what the server core asks of an input on its way to the
callee (`shape`, `dtype`, `nbytes`, `reshape`). The calling stub sends one only when the callee
is a python model that takes GPU inputs (FORCE_CPU_ONLY_INPUT_TENSORS "no"): every other
consumer gets host memory, copied by the caller.

Standard library and numpy only: both processes import it.
"""

from __future__ import annotations

import math

import numpy as np

from ....datatypes import NUMPY_DTYPES


class CudaIpcArray:
    """GPU memory of another process, by its CUDA IPC handle."""

    __slots__ = ("handle", "offset", "device_id", "datatype", "shape")

    def __init__(self, handle: bytes, offset: int, device_id: int, datatype: str,
                 shape: tuple[int, ...]) -> None:
        self.handle = handle  # cuIpcGetMemHandle of the allocation's base
        self.offset = offset  # bytes from the base to the tensor
        self.device_id = device_id
        self.datatype = datatype
        self.shape = tuple(shape)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(NUMPY_DTYPES[self.datatype])

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize

    def reshape(self, shape: tuple[int, ...]) -> CudaIpcArray:
        """The same memory with another shape (the config's `reshape`), as numpy's reshape."""
        shape = tuple(shape)
        if math.prod(shape) != math.prod(self.shape):
            raise ValueError(f"cannot reshape a GPU tensor of shape {self.shape} into {shape}")
        return CudaIpcArray(self.handle, self.offset, self.device_id, self.datatype, shape)

    def __repr__(self) -> str:
        return (f"CudaIpcArray(device {self.device_id}, {self.datatype}, shape {self.shape}, "
                f"offset {self.offset})")
