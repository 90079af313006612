"""Output memory: Triton's MemoryBuffer, MemoryAllocator and the per-request response allocator.

In Triton's in-process API a request may name the memory its outputs should land in
(`output_memory_type`: "cpu", "gpu:0", MemoryType.GPU, (DLDeviceType.kDLCUDA, 0) ...) and an
`output_memory_allocator` that hands out the buffers. Allocators need not honour the memory type
asked for. GPU memory comes from cupy (`device_memory`), as in Triton's API: with cupy and a CUDA
device, GPU outputs are copied into device memory from the default allocator (cupy) or from
a custom one returning device memory; without them, asking for GPU output fails the request
with InvalidArgumentError ("Memory type gpu not supported"), as Triton's API does when no GPU
allocator is present.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import device_memory
from .enums import DLDeviceType, MemoryType
from .errors import InvalidArgumentError, UnsupportedError

DeviceOrMemoryType = tuple[MemoryType, int] | MemoryType | tuple[DLDeviceType, int] | str

_DLPACK_TO_MEMORY = {DLDeviceType.kDLCPU: MemoryType.CPU, DLDeviceType.kDLCUDA: MemoryType.GPU,
                     DLDeviceType.kDLCUDAHost: MemoryType.CPU_PINNED}
_HOST = (MemoryType.CPU, MemoryType.CPU_PINNED)


@dataclass
class MemoryBuffer:
    """Memory holding a tensor's bytes; `owner` keeps it alive (it is never freed while held)."""

    data_ptr: int
    memory_type: MemoryType
    memory_type_id: int
    size: int
    owner: Any

    @staticmethod
    def from_dlpack(owner: Any) -> MemoryBuffer:
        """A buffer over a DLPack object's memory (contiguous, host or CUDA device: no copy)."""
        if device_memory.is_device_memory(owner):
            array = device_array(owner)
            return MemoryBuffer(int(array.data.ptr), MemoryType.GPU, int(array.device.id),
                                int(array.nbytes), owner)
        array = host_array(owner)
        return MemoryBuffer(array.ctypes.data, MemoryType.CPU, 0, array.nbytes, array)

    def view(self) -> np.ndarray:
        """The buffer's bytes as a 1-D uint8 array (host memory: no copy)."""
        if self.memory_type not in _HOST:
            raise UnsupportedError(
                f"Conversion from {self.memory_type} to numpy array not supported.")
        owner = self.owner
        if isinstance(owner, np.ndarray) and owner.ctypes.data == self.data_ptr:
            return owner.reshape(-1).view(np.uint8)[: self.size]
        return host_array(owner).reshape(-1).view(np.uint8)[: self.size]

    def host_bytes(self) -> np.ndarray:
        """The buffer's bytes on the host: a view of host memory, a copy of device memory."""
        if self.memory_type in _HOST:
            return self.view()
        require_gpu((self.memory_type, self.memory_type_id), (MemoryType.CPU, 0))
        return device_memory.to_host(self.data_ptr, self.size, self.memory_type_id, self.owner)


def require_gpu(source: tuple[MemoryType, int], target: tuple[MemoryType, int]) -> None:
    """Triton's UnsupportedError for a copy between host and device without cupy or a GPU."""
    if device_memory.cupy() is None:
        raise UnsupportedError(f"Conversion from {source} to {target} not supported.")


def device_array(obj: Any) -> Any:
    """A CUDA DLPack producer's memory as a cupy array (no copy), contiguous."""
    device_id = device_memory.dlpack_device(obj)[1]
    require_gpu((MemoryType.GPU, device_id), (MemoryType.CPU, 0))
    return _contiguous(_from_dlpack(device_memory.from_dlpack, obj))


def host_array(obj: Any) -> np.ndarray:
    """A DLPack-capable object's host memory as a numpy array, refusing strided memory."""
    if isinstance(obj, np.ndarray):
        return _contiguous(obj)
    if not hasattr(obj, "__dlpack__"):
        raise InvalidArgumentError("Object does not support DLpack protocol")
    return _contiguous(_from_dlpack(np.from_dlpack, obj))


def _from_dlpack(convert: Callable[[Any], Any], obj: Any) -> Any:
    """`convert(obj)` (numpy's or cupy's from_dlpack), with Triton's API message for what DLPack
    cannot hand over."""
    try:
        return convert(obj)
    except (BufferError, RuntimeError, TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"Object does not support DLPack protocol: {exc}") from None


def _contiguous(array: Any) -> Any:
    if not (array.flags.c_contiguous or array.size == 0):
        raise InvalidArgumentError("Only contiguous memory is supported")
    return array


class MemoryAllocator(ABC):
    """Hands out the memory a response's outputs are written to; need not honour the memory
    type asked for (a CPU buffer for a GPU request is the fallback)."""

    @abstractmethod
    def allocate(self, size: int, memory_type: MemoryType, memory_type_id: int,
                 tensor_name: str) -> MemoryBuffer: ...


class NumpyAllocator(MemoryAllocator):
    """Host memory from numpy: the default for MemoryType.CPU (and CPU_PINNED)."""

    def allocate(self, size: int, memory_type: MemoryType, memory_type_id: int,
                 tensor_name: str) -> MemoryBuffer:
        return MemoryBuffer.from_dlpack(np.empty(size, np.uint8))


class CupyAllocator(MemoryAllocator):
    """Device memory from cupy on the GPU asked for: the default for MemoryType.GPU where
    cupy sees a CUDA device."""

    def allocate(self, size: int, memory_type: MemoryType, memory_type_id: int,
                 tensor_name: str) -> MemoryBuffer:
        count = device_memory.device_count()
        if not 0 <= memory_type_id < count:
            raise InvalidArgumentError(
                f"Memory type {(memory_type, memory_type_id)} not supported: GPU "
                f"{memory_type_id} does not exist ({count} CUDA devices visible)")
        owner = device_memory.allocate(size, memory_type_id)
        return MemoryBuffer(int(owner.data.ptr), MemoryType.GPU, memory_type_id, size, owner)


# Memory type -> the allocator used when a request names the type but no allocator. The GPU
# entry (cupy's, as in Triton) is added the first time GPU memory is asked for where cupy sees
# a CUDA device, so that importing the API never imports cupy.
default_memory_allocators: dict[MemoryType, MemoryAllocator] = {
    MemoryType.CPU: NumpyAllocator(),
    MemoryType.CPU_PINNED: NumpyAllocator(),
}


def default_allocator(memory_type: MemoryType) -> MemoryAllocator | None:
    """The allocator for a memory type named without one (None: that memory is not served)."""
    if (memory_type == MemoryType.GPU and memory_type not in default_memory_allocators
            and device_memory.cupy() is not None):
        default_memory_allocators[memory_type] = CupyAllocator()
    return default_memory_allocators.get(memory_type)


def parse_device_or_memory_type(device: DeviceOrMemoryType) -> tuple[MemoryType, int]:
    """"cpu", "gpu:1", MemoryType.GPU, (MemoryType.GPU, 1) or (DLDeviceType.kDLCUDA, 1) ->
    (memory type, id), with Triton's InvalidArgumentError for anything else."""
    if isinstance(device, tuple) and len(device) == 2:
        kind, number = device
        if isinstance(kind, MemoryType):
            return kind, int(number)
        if isinstance(kind, DLDeviceType):
            return _DLPACK_TO_MEMORY[kind], int(number)
        raise InvalidArgumentError(f"Invalid memory type {device}")
    if isinstance(device, MemoryType):
        return device, 0
    if isinstance(device, str):
        parts = device.split(":")
        if len(parts) > 2 or parts[0].upper() not in MemoryType.__members__:
            raise InvalidArgumentError(f"Invalid memory type string {device}")
        try:
            number = int(parts[1]) if len(parts) == 2 else 0
        except ValueError:
            raise InvalidArgumentError(f"Invalid memory type string {device}") from None
        return MemoryType[parts[0].upper()], number
    raise InvalidArgumentError(f"Invalid memory type {device}")


class ResponseAllocator:
    """Where one request's outputs go: the memory type asked for and the allocator giving it.

    Built when the request is sent, so a bad `output_memory_type` fails `infer()` at once.
    """

    def __init__(self, allocator: MemoryAllocator | None,
                 device: DeviceOrMemoryType | None) -> None:
        self.device = device
        self.memory_type: MemoryType | None = None
        self.memory_type_id = 0
        if device is not None:
            self.memory_type, self.memory_type_id = parse_device_or_memory_type(device)
        self.allocator = allocator
        if allocator is None and self.memory_type is not None:
            self.allocator = default_allocator(self.memory_type)

    @property
    def copies(self) -> bool:
        """False when outputs may stay in the memory the model produced (host memory)."""
        return self.memory_type is not None or self.allocator is not None

    def place(self, name: str, data: np.ndarray) -> MemoryBuffer:
        """Copy an output's bytes into memory from the allocator; GPU without an allocator
        answers as Triton's API does on a machine without GPUs."""
        if self.allocator is None:
            raise InvalidArgumentError(
                f"Memory type {self.device} not supported: "
                + str(UnsupportedError(
                    f"Conversion from {(MemoryType.CPU, 0)} to "
                    f"{(self.memory_type, self.memory_type_id)} not supported."))
            )
        source = data.reshape(-1).view(np.uint8)
        memory_type = self.memory_type if self.memory_type is not None else MemoryType.CPU
        buffer = self.allocator.allocate(source.nbytes, memory_type, self.memory_type_id, name)
        if buffer.size < source.nbytes:
            raise InvalidArgumentError(
                f"allocator returned {buffer.size} bytes for output '{name}', "
                f"{source.nbytes} needed"
            )
        if buffer.memory_type in _HOST:
            buffer.view()[: source.nbytes] = source
        elif buffer.memory_type == MemoryType.GPU:
            require_gpu((MemoryType.CPU, 0), (buffer.memory_type, buffer.memory_type_id))
            device_memory.copy_to_device(buffer.data_ptr, buffer.memory_type_id, buffer.owner,
                                         source)
        else:
            raise UnsupportedError(
                f"allocator for '{name}' returned memory of unknown type {buffer.memory_type}")
        buffer.size = source.nbytes
        return buffer
