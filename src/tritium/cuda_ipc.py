"""The CUDA calls behind client CUDA shared memory: open a client's `cudaIpcMemHandle_t`, copy
between that device memory and host arrays, close it.

They go through NVIDIA's maintained binding, cuda-python (`cuda.bindings`, the binding
`tritonclient.utils.cuda_shared_memory` itself uses to make the handles), imported on the first
CUDA registration only: a server whose clients never register CUDA memory never loads it, and one
without it answers those registrations with what to install.

Every call names its device first (`cudaSetDevice`; the current device is per thread and the
frontends' threads use no other CUDA state). Copies run on one non-blocking stream per device
and wait for it, so the bytes have landed before a response tells the client to read them (a
copy from pageable host memory may otherwise return before its DMA ends).
"""

from __future__ import annotations

import ctypes
import importlib
import threading
from types import ModuleType
from typing import Any

import numpy as np

# sizeof(cudaIpcMemHandle_t)
HANDLE_SIZE = 64

_lock = threading.Lock()
_binding: tuple[ModuleType, ModuleType] | None = None
_streams: dict[int, Any] = {}


class CudaError(Exception):
    """A CUDA call failed (the message is CUDA's), or the binding is not installed."""


def _modules() -> tuple[ModuleType, ModuleType]:
    """(cuda.bindings.runtime, cuda.bindings.driver), imported once."""
    global _binding
    if _binding is None:
        try:
            runtime = importlib.import_module("cuda.bindings.runtime")
            driver = importlib.import_module("cuda.bindings.driver")
        except ImportError:
            raise CudaError(
                "the server cannot open CUDA IPC handles without NVIDIA's cuda-python binding "
                "(module 'cuda.bindings'); install it next to the server: pip install cuda-python"
            ) from None
        _binding = (runtime, driver)
    return _binding


def _check(result: tuple[Any, ...]) -> Any:
    """The value(s) a cuda-python call returns after its status; CudaError if it failed."""
    runtime, driver = _modules()
    status = result[0]
    if isinstance(status, driver.CUresult):
        if status != driver.CUresult.CUDA_SUCCESS:
            _, text = driver.cuGetErrorString(status)
            raise CudaError(_decode(text, status))
    elif status != runtime.cudaError_t.cudaSuccess:
        _, text = runtime.cudaGetErrorString(status)
        raise CudaError(_decode(text, status))
    values = result[1:]
    return values[0] if len(values) == 1 else values


def _decode(text: Any, status: Any) -> str:
    return text.decode() if isinstance(text, bytes) and text else str(status)


def open_handle(raw_handle: bytes, device_id: int) -> int:
    """Map a client's device allocation into this process on `device_id`; its address."""
    runtime, _ = _modules()
    try:
        _check(runtime.cudaSetDevice(device_id))
        handle = runtime.cudaIpcMemHandle_t()
        # cuda-bindings 13 exposes the handle's bytes only through its address.
        ctypes.memmove(handle.getPtr(), raw_handle, HANDLE_SIZE)
        return int(_check(runtime.cudaIpcOpenMemHandle(
            handle, runtime.cudaIpcMemLazyEnablePeerAccess)))
    except CudaError as exc:
        raise CudaError(f"failed to open CUDA IPC handle: {exc}") from None


def allocation_bytes_from(pointer: int) -> int:
    """How many bytes of the allocation that holds `pointer` lie at and after it."""
    _, driver = _modules()
    base, size = _check(driver.cuMemGetAddressRange(pointer))
    return int(base) + int(size) - pointer


def close_handle(pointer: int, device_id: int) -> None:
    runtime, _ = _modules()
    _check(runtime.cudaSetDevice(device_id))
    _check(runtime.cudaIpcCloseMemHandle(pointer))


def copy_to_host(pointer: int, byte_size: int, device_id: int) -> np.ndarray:
    """`byte_size` bytes at device address `pointer`, copied once into a new host array."""
    host = np.empty(byte_size, dtype=np.uint8)
    if byte_size:
        _copy(host.ctypes.data, pointer, byte_size, device_id)
    return host


def copy_to_device(pointer: int, payload: np.ndarray, device_id: int) -> None:
    """Copy a contiguous host array to device address `pointer`, once."""
    if payload.nbytes:
        _copy(pointer, payload.ctypes.data, payload.nbytes, device_id)


def _copy(destination: int, source: int, byte_size: int, device_id: int) -> None:
    runtime, _ = _modules()
    _check(runtime.cudaSetDevice(device_id))
    stream = _stream(device_id)
    _check(runtime.cudaMemcpyAsync(destination, source, byte_size,
                                   runtime.cudaMemcpyKind.cudaMemcpyDefault, stream))
    _check(runtime.cudaStreamSynchronize(stream))


def _stream(device_id: int) -> Any:
    """This process's copy stream on `device_id` (the device is current), made on first use."""
    stream = _streams.get(device_id)
    if stream is None:
        runtime, _ = _modules()
        with _lock:
            stream = _streams.get(device_id)
            if stream is None:
                stream = _check(runtime.cudaStreamCreateWithFlags(
                    runtime.cudaStreamNonBlocking))
                _streams[device_id] = stream
    return stream
