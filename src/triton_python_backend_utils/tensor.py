"""``Tensor``: a named numpy array with its Triton datatype, or a CUDA tensor a model made
(``device_tensor``), and DLPack exchange with other frameworks."""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from . import bf16
from .device_tensor import KDL_CUDA, NOT_CONTIGUOUS, DeviceTensor
from .dtypes import _NUMPY_OF_TRITON, _TYPE_BF16, _TYPE_BYTES
from .errors import TritonModelException
from .pybind_args import IncompatibleArguments, as_str, pybind_constructor

_KDL_CPU, _KDL_CUDA_HOST = 1, 3

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
    """A named tensor held as a numpy array (BYTES tensors are object arrays of bytes), or, for
    a CUDA tensor, as its `DeviceTensor` (`_array` is then None)."""

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
        self._array: np.ndarray | None = numpy_array
        self._dtype = dtype
        self._device: DeviceTensor | None = None

    @classmethod
    def _from_server(cls, name: str, array: np.ndarray, bf16: bool = False) -> Tensor:
        """A tensor the server sent (stub only): its name and array are already valid, so the
        checks of the public constructor are skipped. A BF16 tensor's elements are uint16.
        """
        tensor = cls.__new__(cls)
        tensor._name = name
        tensor._array = array
        dtype = _TYPE_BF16 if bf16 else _TRITON_OF_DTYPE.get(array.dtype)
        tensor._dtype = _TYPE_BYTES if dtype is None else dtype
        tensor._device = None
        return tensor

    @classmethod
    def _on_device(cls, name: str, device: DeviceTensor) -> Tensor:
        """A Tensor holding GPU memory."""
        dtype = _TRITON_OF_DTYPE.get(device.dtype)
        if dtype is None:
            raise TritonModelException("NumPy dtype is not supported.")
        tensor = cls.__new__(cls)
        tensor._name = name
        tensor._array = None
        tensor._dtype = dtype
        tensor._device = device
        return tensor

    def _host_array(self) -> np.ndarray:
        """The tensor in host memory: its array, or a copy of its GPU memory (stub only: what
        goes on the wire to the server)."""
        if self._array is not None:
            return self._array
        assert self._device is not None
        return self._device.to_host()

    def name(self) -> str:
        return self._name

    def as_numpy(self) -> np.ndarray:
        if self._array is None:
            raise TritonModelException("Tensor is stored in GPU and cannot be converted to NumPy.")
        if self._dtype == _TYPE_BF16:
            raise TritonModelException(
                "Tensor dtype is BF16 and cannot be converted to NumPy. Use to_dlpack() and "
                "from_dlpack() instead.")
        return self._array

    def triton_dtype(self) -> int:
        """The TRITONSERVER_DataType code (an int)."""
        return self._dtype

    def shape(self) -> list[int]:
        if self._array is None:
            assert self._device is not None
            return list(self._device.shape)
        return list(self._array.shape)

    def is_cpu(self) -> bool:
        return self._array is not None

    def to_dlpack(self) -> object:
        """A DLPack capsule sharing this tensor's memory."""
        return self.__dlpack__()

    def __dlpack__(self, stream: Any = None, **kwargs: Any) -> object:
        if self._dtype == _TYPE_BYTES:
            raise TritonModelException("DLPack does not have support for string tensors.")
        array = self._array
        if array is None:
            assert self._device is not None
            return self._device.__dlpack__(stream=stream, **kwargs)
        if self._dtype == _TYPE_BF16:
            return bf16.to_dlpack(array)
        if not array.flags.writeable and "max_version" not in kwargs:
            # A pre-1.0 DLPack capsule cannot mark memory read-only: hand out a copy.
            array = array.copy()
        return array.__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        if self._device is not None:
            return self._device.__dlpack_device__()
        return (_KDL_CPU, 0)

    @staticmethod
    def from_dlpack(name: str, tensor: Any) -> Tensor:
        """A Tensor sharing the memory of a DLPack capsule or of a ``__dlpack__`` object, in
        host memory or on a GPU."""
        if name == "":
            raise TritonModelException("Tensor name cannot be an empty string.")
        if bf16.is_bf16(tensor):  # numpy has no bfloat16: its elements as uint16
            return Tensor._checked_host(name, bf16.from_dlpack(tensor), True)
        if _is_capsule(tensor):
            try:
                array = np.from_dlpack(cast(Any, _DLPackCapsule(tensor)))
            except (RuntimeError, BufferError):  # not host memory: numpy left the capsule unused
                return Tensor._on_device(name, DeviceTensor.adopt(tensor))
            return Tensor._checked_host(name, array)
        if hasattr(tensor, "__dlpack__") and hasattr(tensor, "__dlpack_device__"):
            device_type = tensor.__dlpack_device__()[0]
            if device_type == KDL_CUDA:
                return Tensor._on_device(name, DeviceTensor.adopt(tensor))
            if device_type not in (_KDL_CPU, _KDL_CUDA_HOST):
                raise TritonModelException(
                    f"DLDevice type {int(device_type)} is not support by Python backend."
                )
            return Tensor._checked_host(name, np.from_dlpack(tensor))
        raise TritonModelException(
            "Provided tensor is not supported. Tensor must be a DLPack capsule "
            "        or have `__dlpack__` and `__dlpack_device__` attributes"
        )

    @staticmethod
    def _checked_host(name: str, array: np.ndarray, is_bf16: bool = False) -> Tensor:
        if not array.flags.c_contiguous:
            raise TritonModelException(NOT_CONTIGUOUS)
        if is_bf16:
            return Tensor._from_server(name, array, True)
        return Tensor(name, array)

    def __repr__(self) -> str:
        held = self._array if self._device is None else self._device.obj
        return f"Tensor({self._name!r}, {held!r})"


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
