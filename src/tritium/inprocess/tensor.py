"""Tensor: Triton's in-process API tensor (data type, shape, memory buffer), numpy and DLPack.

A Tensor is a view of memory, never a copy unless a conversion needs one: `from_dlpack` wraps any
DLPack producer (numpy, torch tensors on the CPU or a CUDA device, cupy arrays, ...),
`numpy.from_dlpack(tensor)` and `torch.from_dlpack(tensor)` read it back through `__dlpack__`
(a tensor in GPU memory answers kDLCUDA and hands out cupy's DLPack form, stream handling
included). The core carries host arrays, so a GPU tensor sent as an input is copied to the host.
BYTES tensors hold Triton's serialised form (a 4-byte length before each element), as in
Triton, and are read with `to_bytes_array()` / `to_string_array()`; they keep the element array
they came from, so that handing them to the core costs no second parse.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import tensor as core
from . import device_memory
from .allocators import (
    DeviceOrMemoryType,
    MemoryBuffer,
    default_allocator,
    device_array,
    host_array,
    parse_device_or_memory_type,
    require_gpu,
)
from .enums import DataType, DLDeviceType, MemoryType, from_numpy, numpy_type
from .errors import InvalidArgumentError, UnsupportedError


class Tensor:
    """A tensor: `data_type`, `shape` and the `memory_buffer` (host or GPU) holding it."""

    __slots__ = ("__weakref__", "_buffer", "_elements", "data_type", "shape")

    def __init__(self, data_type: DataType, shape: Any, memory_buffer: MemoryBuffer | None = None,
                 *, elements: np.ndarray | None = None) -> None:
        self.data_type = DataType(data_type)
        self.shape = [int(d) for d in shape]
        self._buffer = memory_buffer
        # BYTES only: the elements as a numpy object array of bytes (serialised on demand).
        self._elements = elements

    # -- the memory --------------------------------------------------------------------------

    @property
    def memory_buffer(self) -> MemoryBuffer:
        if self._buffer is None:
            assert self._elements is not None
            serialised = np.frombuffer(core.serialize_bytes(self._elements), np.uint8)
            self._buffer = MemoryBuffer(serialised.ctypes.data, MemoryType.CPU, 0,
                                        serialised.nbytes, serialised)
        return self._buffer

    @property
    def data_ptr(self) -> int:
        return self.memory_buffer.data_ptr

    @property
    def memory_type(self) -> MemoryType:
        return self.memory_buffer.memory_type

    @property
    def memory_type_id(self) -> int:
        return self.memory_buffer.memory_type_id

    @property
    def size(self) -> int:
        """Bytes of data (for BYTES: of the serialised form)."""
        return self.memory_buffer.size

    def __repr__(self) -> str:
        return (f"Tensor(data_type={self.data_type!r}, shape={self.shape}, "
                f"memory_type={self.memory_type!r}, size={self.size})")

    # -- DLPack ------------------------------------------------------------------------------

    def __dlpack__(self, *, stream: Any = None, **kwargs: Any) -> Any:
        if self.memory_type == MemoryType.GPU:
            # cupy's DLPack form makes the consumer's stream wait for the data (Triton's API
            # synchronises the same way, through cupy).
            return self._device_view().__dlpack__(stream=stream, **kwargs)
        if stream not in (None, 0, -1):
            raise UnsupportedError(
                f"DLPack stream synchronization on memory type {self.memory_type} and stream "
                f"{stream} not supported"
            )
        return np.asarray(_Keeper(self._host_view(), self)).__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[DLDeviceType, int]:
        if self.memory_type == MemoryType.GPU:
            return DLDeviceType.kDLCUDA, self.memory_type_id
        return DLDeviceType.kDLCPU, 0

    def _dtype(self) -> np.dtype:
        if self.data_type == DataType.BYTES:
            raise InvalidArgumentError(
                "BYTES tensors have no DLPack form: use to_bytes_array() or to_string_array()"
            )
        return numpy_type(self.data_type)

    def _host_view(self) -> np.ndarray:
        """The data as a numpy array of `shape` (a view of host memory, a copy of GPU memory)."""
        dtype = self._dtype()
        return self.memory_buffer.host_bytes().view(dtype).reshape(self.shape)

    def _device_view(self) -> Any:
        """The data as a cupy array of `shape` over the GPU buffer (no copy)."""
        buffer = self.memory_buffer
        require_gpu((buffer.memory_type, buffer.memory_type_id), (MemoryType.CPU, 0))
        return device_memory.view(buffer.data_ptr, buffer.size, buffer.memory_type_id,
                                  buffer.owner, self._dtype(), tuple(self.shape))

    @staticmethod
    def from_dlpack(obj: Any) -> Tensor:
        """A tensor over a DLPack producer's memory (host or CUDA device, contiguous; no copy)."""
        if device_memory.is_device_memory(obj):
            device = device_array(obj)
            return Tensor(from_numpy(device.dtype), device.shape, MemoryBuffer(
                int(device.data.ptr), MemoryType.GPU, int(device.device.id), int(device.nbytes),
                device))
        array = host_array(obj)
        return Tensor(from_numpy(array.dtype), array.shape, MemoryBuffer(
            array.ctypes.data, MemoryType.CPU, 0, array.nbytes, array))

    def to_host(self) -> Tensor:
        return self.to_device("cpu")

    def to_device(self, device: DeviceOrMemoryType) -> Tensor:
        """This tensor when it is there already, else a copy (host <-> GPU needs cupy and a
        CUDA device, as in Triton's API)."""
        memory_type, memory_type_id = parse_device_or_memory_type(device)
        source = (self.memory_type, self.memory_type_id)
        host = (MemoryType.CPU, MemoryType.CPU_PINNED)
        if memory_type in host and self.memory_type in host:
            return self
        if source == (memory_type, memory_type_id):
            return self
        target = (memory_type, memory_type_id)
        if memory_type == MemoryType.GPU:
            require_gpu(source, target)
            data = self.memory_buffer.host_bytes()
            allocator = default_allocator(MemoryType.GPU)
            assert allocator is not None
            placed = allocator.allocate(data.nbytes, memory_type, memory_type_id, "")
            device_memory.copy_to_device(placed.data_ptr, placed.memory_type_id, placed.owner,
                                         data)
            return Tensor(self.data_type, self.shape, placed)
        if memory_type in host:
            data = self.memory_buffer.host_bytes()
            return Tensor(self.data_type, self.shape, MemoryBuffer(
                data.ctypes.data, MemoryType.CPU, 0, data.nbytes, data))
        raise UnsupportedError(f"Conversion from {source} to {target} not supported.")

    # -- BYTES -------------------------------------------------------------------------------

    def to_bytes_array(self) -> np.ndarray:
        if self.data_type != DataType.BYTES:
            raise InvalidArgumentError(
                f"Tensor has data type {self.data_type} not {DataType.BYTES}"
            )
        if self._elements is None:
            wire = self.memory_buffer.host_bytes().tobytes()
            self._elements = core.bytes_from_wire(wire, None, "", "", "")
        return self._elements.reshape(self.shape)

    def to_string_array(self) -> np.ndarray:
        """The elements as text (UTF-8), a numpy str array of `shape`."""
        elements = self.to_bytes_array()
        text = [item.decode("utf-8") if isinstance(item, bytes) else str(item)
                for item in elements.reshape(-1).tolist()]
        return np.array(text, dtype=str).reshape(elements.shape)

    @staticmethod
    def from_bytes_array(array: Any) -> Tensor:
        tensor = Tensor._from_object(array)
        if tensor.data_type != DataType.BYTES:
            raise InvalidArgumentError(
                f"Unsupported conversion from {array} to Triton BYTES Tensor. "
                f"Got {tensor.data_type}"
            )
        return tensor

    @staticmethod
    def from_string_array(array: Any) -> Tensor:
        return Tensor.from_bytes_array(array)

    # -- conversions ---------------------------------------------------------------------------

    @staticmethod
    def _from_object(obj: Any) -> Tensor:
        """What the API accepts as input data: a Tensor, numpy arrays and scalars, lists, and
        any DLPack producer."""
        if isinstance(obj, Tensor):
            return obj
        if isinstance(obj, (list, tuple, np.generic)):
            try:
                obj = np.asarray(obj)
            except ValueError as exc:
                raise InvalidArgumentError(
                    f"Conversion from {obj} to tensor not supported."
                ) from exc
        if isinstance(obj, np.ndarray):
            if obj.dtype.kind in ("S", "U", "O"):
                elements = np.empty(obj.size, np.object_)
                elements[:] = [_as_bytes(item) for item in obj.reshape(-1).tolist()]
                return Tensor(DataType.BYTES, obj.shape, elements=elements)
            return Tensor.from_dlpack(np.ascontiguousarray(obj))
        if hasattr(obj, "__dlpack__"):
            return Tensor.from_dlpack(obj)
        raise InvalidArgumentError(
            f"Input type {type(obj)} not supported. Must be one of [list, numpy.ndarray, "
            "Tensor] or the type must support __dlpack__"
        )

    def _placed(self, buffer: MemoryBuffer) -> Tensor:
        """This tensor over a copy of its bytes in `buffer` (a response allocator's memory);
        a BYTES tensor keeps its elements, so reading them back costs no parse."""
        return Tensor(self.data_type, self.shape, buffer, elements=self._elements)

    def _to_core(self, name: str) -> core.Tensor:
        """The core's tensor for a request input (numpy data: a view of host memory, a copy of
        GPU memory)."""
        data = self.to_bytes_array() if self.data_type == DataType.BYTES else self._host_view()
        return core.Tensor(name, self.data_type.name, tuple(self.shape), data)

    @staticmethod
    def _from_core(tensor: core.Tensor) -> Tensor:
        """A response output as the API's tensor (a view of the core's array)."""
        data = tensor.data
        if tensor.datatype == "BYTES":
            return Tensor(DataType.BYTES, tensor.shape, elements=np.asarray(data).reshape(-1))
        array = np.ascontiguousarray(data)
        return Tensor(DataType[tensor.datatype], tensor.shape, MemoryBuffer(
            array.ctypes.data, MemoryType.CPU, 0, array.nbytes, array))


def _as_bytes(item: Any) -> bytes:
    """A BYTES element as Triton serialises it: bytes as they are, anything else as UTF-8 text."""
    if isinstance(item, bytes):
        return item
    return str(item).encode("utf-8")


_READONLY_UNEXPORTABLE = int(np.__version__.split(".")[0]) < 2


class _Keeper:
    """A host array's memory, exported with the tensor it came from held: an array made from
    a DLPack capsule of this keeps the Tensor alive (as Triton's capsule does), so the memory a
    custom allocator handed out is not released while any consumer still reads it."""

    __slots__ = ("__array_interface__", "_array", "_tensor")

    def __init__(self, array: np.ndarray, tensor: Tensor) -> None:
        self._array = array
        self._tensor = tensor
        interface = array.__array_interface__
        if _READONLY_UNEXPORTABLE and interface["data"][1]:
            # numpy 1.x refuses to export a read-only array over DLPack (2.x flags it) and
            # gives read-only arrays from np.from_dlpack: exported as Triton's capsule is,
            # without the flag, a tensor made from torch could not be read back at all.
            interface = {**interface, "data": (interface["data"][0], False)}
        self.__array_interface__ = interface
