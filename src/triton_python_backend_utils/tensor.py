"""``Tensor``: a named numpy array with its Triton datatype, and DLPack exchange with other
frameworks (CPU memory only: Tritium has no GPU)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .dtypes import _NUMPY_OF_TRITON, _TYPE_BYTES
from .errors import TritonModelException
from .pybind_args import IncompatibleArguments, as_str, pybind_constructor

_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST = 1, 2, 3

# TRITONSERVER_DataType of the dtypes a Tensor accepts (native byte order only, as Triton).
_TRITON_OF_DTYPE = {np.dtype(t): code for code, t in _NUMPY_OF_TRITON.items()}


class _DLPackCapsule:
    """Lets np.from_dlpack consume a bare DLPack capsule (numpy checks its real device)."""

    def __init__(self, capsule: object) -> None:
        self._capsule = capsule

    def __dlpack__(self, **_kwargs: Any) -> object:
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_KDL_CPU, 0)


def _is_capsule(obj: object) -> bool:
    return type(obj).__name__ == "PyCapsule"


class Tensor:
    """A named tensor held as a numpy array; BYTES tensors are object arrays of bytes."""

    @pybind_constructor("c_python_backend_utils.Tensor(arg0: str, arg1: numpy.ndarray)")
    def __init__(self, name: str, numpy_array: np.ndarray, /) -> None:
        name = as_str(name)
        if not isinstance(numpy_array, np.ndarray):
            raise IncompatibleArguments()
        if name == "":
            raise TritonModelException("Tensor name cannot be an empty string.")
        dtype = _TRITON_OF_DTYPE.get(numpy_array.dtype)
        if dtype is None:
            if numpy_array.dtype.type is not np.bytes_:
                raise TritonModelException("NumPy dtype is not supported.")
            dtype = _TYPE_BYTES
        if not numpy_array.flags.c_contiguous:
            numpy_array = np.ascontiguousarray(numpy_array)
        self._name = name
        self._array = numpy_array
        self._dtype = dtype

    @classmethod
    def _from_server(cls, name: str, array: np.ndarray) -> Tensor:
        """An input the server sent (stub only): its name and array are already valid, so the
        checks of the public constructor are skipped.
        """
        tensor = cls.__new__(cls)
        tensor._name = name
        tensor._array = array
        dtype = _TRITON_OF_DTYPE.get(array.dtype)
        tensor._dtype = _TYPE_BYTES if dtype is None else dtype
        return tensor

    def name(self) -> str:
        return self._name

    def as_numpy(self) -> np.ndarray:
        return self._array

    def triton_dtype(self) -> int:
        """The TRITONSERVER_DataType code (an int)."""
        return self._dtype

    def shape(self) -> list[int]:
        return list(self._array.shape)

    def is_cpu(self) -> bool:
        return True

    def to_dlpack(self) -> object:
        """A DLPack capsule sharing this tensor's memory."""
        return self.__dlpack__()

    def __dlpack__(self, stream: Any = None, **kwargs: Any) -> object:
        if self._dtype == _TYPE_BYTES:
            raise TritonModelException("DLPack does not have support for string tensors.")
        array = self._array
        if not array.flags.writeable and "max_version" not in kwargs:
            # A pre-1.0 DLPack capsule cannot mark memory read-only: hand out a copy.
            array = array.copy()
        return array.__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_KDL_CPU, 0)

    @staticmethod
    def from_dlpack(name: str, tensor: Any) -> Tensor:
        """A Tensor sharing the memory of a DLPack capsule or of a ``__dlpack__`` object."""
        if name == "":
            raise TritonModelException("Tensor name cannot be an empty string.")
        if _is_capsule(tensor):
            producer: Any = _DLPackCapsule(tensor)
        elif hasattr(tensor, "__dlpack__") and hasattr(tensor, "__dlpack_device__"):
            device_type = tensor.__dlpack_device__()[0]
            if device_type == _KDL_CUDA:
                raise TritonModelException(
                    "DLPack capsule passed pointer to memory allocated on GPU device, "
                    "          when GPU is not available"
                )
            if device_type not in (_KDL_CPU, _KDL_CUDA_HOST):
                raise TritonModelException(
                    f"DLDevice type {int(device_type)} is not support by Python backend."
                )
            producer = tensor
        else:
            raise TritonModelException(
                "Provided tensor is not supported. Tensor must be a DLPack capsule "
                "        or have `__dlpack__` and `__dlpack_device__` attributes"
            )
        array = np.from_dlpack(producer)
        if not array.flags.c_contiguous:
            raise TritonModelException(
                "DLPack tensor is not contiguous. Only contiguous DLPack tensors that are "
                "stored in C-Order are supported."
            )
        return Tensor(name, array)

    def __repr__(self) -> str:
        return f"Tensor({self._name!r}, {self._array!r})"


def _tensor_list(values: Any, owner: str, none_message: str) -> list[Tensor]:
    """Check a list of Tensors as pybind does; a None element gets Triton's message."""
    if not isinstance(values, (list, tuple)):
        raise IncompatibleArguments()
    for value in values:
        if value is None:
            raise TritonModelException(none_message)
        if not isinstance(value, Tensor):
            raise IncompatibleArguments()
    return list(values)
