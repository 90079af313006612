"""GPU memory for the in-process API, through cupy, imported on first use.

Triton's API reaches device memory with cupy: its default GPU allocator, the copies between host
and device, and the DLPack form of a tensor in device memory. Tritium does the same, but imports
cupy only when a request or a tensor touches GPU memory, so CPU-only programs never load it.
Where cupy or a CUDA device is missing, `cupy()` answers None and the callers keep Triton's
"not supported" answers. The core carries numpy arrays: device inputs are copied to the host on
their way in, GPU outputs are copied to the device on their way out.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

import numpy as np

# dlpack.h's device types that are device memory a host copy must come from.
DLPACK_CUDA = 2
DLPACK_CUDA_MANAGED = 13


@functools.cache
def cupy() -> Any | None:
    """The cupy module when it imports and sees a CUDA device, else None (asked once)."""
    try:
        module = importlib.import_module("cupy")
        count = module.cuda.runtime.getDeviceCount()
    except (ImportError, OSError, RuntimeError):
        # No cupy, no CUDA libraries, or a driver that answers "no device" (cupy's
        # CUDARuntimeError is a RuntimeError).
        return None
    return module if count > 0 else None


def device_count() -> int:
    module = cupy()
    return 0 if module is None else int(module.cuda.runtime.getDeviceCount())


def dlpack_device(obj: Any) -> tuple[int, int]:
    """A DLPack producer's (device type, device id); host memory for objects that do not say."""
    if not hasattr(obj, "__dlpack_device__"):
        return 1, 0
    device_type, device_id = obj.__dlpack_device__()
    return int(device_type), int(device_id)


def is_device_memory(obj: Any) -> bool:
    """Whether a DLPack producer's memory is on a CUDA device (managed memory too)."""
    return dlpack_device(obj)[0] in (DLPACK_CUDA, DLPACK_CUDA_MANAGED)


def from_dlpack(obj: Any) -> Any:
    """A cupy array over a device DLPack producer's memory (no copy); the caller checked
    `cupy()`."""
    module = cupy()
    assert module is not None
    return module.from_dlpack(obj)


def view(data_ptr: int, size: int, device_id: int, owner: Any, dtype: np.dtype,
         shape: tuple[int, ...]) -> Any:
    """A cupy array of `shape` over `size` bytes of device memory that `owner` keeps alive."""
    module = cupy()
    assert module is not None
    memory = module.cuda.UnownedMemory(data_ptr, size, owner, device_id)
    return module.ndarray(shape, dtype, module.cuda.MemoryPointer(memory, 0))


def to_host(data_ptr: int, size: int, device_id: int, owner: Any) -> np.ndarray:
    """`size` bytes of device memory copied to a new host array of uint8."""
    module = cupy()
    assert module is not None
    with module.cuda.Device(device_id):
        return module.asnumpy(view(data_ptr, size, device_id, owner, np.dtype(np.uint8), (size,)))


def copy_to_device(data_ptr: int, device_id: int, owner: Any, source: np.ndarray) -> None:
    """Write a host array's bytes to device memory; returns once they are there, so whoever
    holds the pointer (a custom allocator's owner, a DLPack consumer on any stream) reads them."""
    module = cupy()
    assert module is not None
    data = np.ascontiguousarray(source).reshape(-1).view(np.uint8)
    with module.cuda.Device(device_id):
        view(data_ptr, data.nbytes, device_id, owner, np.dtype(np.uint8), (data.nbytes,)).set(data)
        module.cuda.get_current_stream().synchronize()


def allocate(size: int, device_id: int) -> Any:
    """`size` bytes on a device, as a cupy uint8 array (its owner)."""
    module = cupy()
    assert module is not None
    with module.cuda.Device(device_id):
        return module.empty(size, module.uint8)
