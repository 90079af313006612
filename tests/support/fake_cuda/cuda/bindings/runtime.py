"""The runtime half of the fake binding (see the package's docstring)."""

from __future__ import annotations

import ctypes
import enum
import mmap
import os
import threading
from typing import Any

from . import HANDLE_SIZE, MAGIC

CUDA_IPC_HANDLE_SIZE = HANDLE_SIZE
cudaIpcMemLazyEnablePeerAccess = 1
cudaStreamNonBlocking = 1


class cudaError_t(enum.IntEnum):
    cudaSuccess = 0
    cudaErrorInvalidValue = 1
    cudaErrorInvalidDevice = 101
    cudaErrorInvalidResourceHandle = 400


# What the real cudaGetErrorString answers.
_TEXTS = {
    cudaError_t.cudaSuccess: b"no error",
    cudaError_t.cudaErrorInvalidValue: b"invalid argument",
    cudaError_t.cudaErrorInvalidDevice: b"invalid device ordinal",
    cudaError_t.cudaErrorInvalidResourceHandle: b"invalid resource handle",
}


class cudaMemcpyKind(enum.IntEnum):
    cudaMemcpyDefault = 4


class cudaIpcMemHandle_t:
    def __init__(self) -> None:
        self._bytes = ctypes.create_string_buffer(HANDLE_SIZE)

    def getPtr(self) -> int:
        return ctypes.addressof(self._bytes)


class cudaStream_t:
    pass


class _Opened:
    """One fake allocation mapped in this process, opened `count` times (as CUDA counts)."""

    def __init__(self, mapping: mmap.mmap) -> None:
        self.mapping = mapping
        self.anchor = ctypes.c_char.from_buffer(mapping)
        self.pointer = ctypes.addressof(self.anchor)
        self.count = 1


_lock = threading.Lock()
_by_name: dict[bytes, _Opened] = {}
# Allocations by address, for cuMemGetAddressRange.
opened: dict[int, _Opened] = {}


def _devices() -> int:
    return int(os.environ.get("TRITIUM_FAKE_CUDA_DEVICES", "1"))


def cudaGetErrorString(error: cudaError_t) -> tuple[cudaError_t, bytes]:
    return cudaError_t.cudaSuccess, _TEXTS[error]


def cudaSetDevice(device: int) -> tuple[cudaError_t]:
    if not 0 <= device < _devices():
        return (cudaError_t.cudaErrorInvalidDevice,)
    return (cudaError_t.cudaSuccess,)


def cudaIpcOpenMemHandle(handle: cudaIpcMemHandle_t, flags: int) -> tuple[cudaError_t, Any]:
    raw = handle._bytes.raw
    name = raw[len(MAGIC):].rstrip(b"\0")
    if not raw.startswith(MAGIC) or not name:
        return cudaError_t.cudaErrorInvalidValue, None
    with _lock:
        entry = _by_name.get(name)
        if entry is not None:
            entry.count += 1
            return cudaError_t.cudaSuccess, entry.pointer
        try:
            fd = os.open(b"/dev/shm/" + name, os.O_RDWR)
        except OSError:
            return cudaError_t.cudaErrorInvalidValue, None
        try:
            entry = _Opened(mmap.mmap(fd, 0))
        finally:
            os.close(fd)
        _by_name[name] = opened[entry.pointer] = entry
    return cudaError_t.cudaSuccess, entry.pointer


def cudaIpcCloseMemHandle(pointer: int) -> tuple[cudaError_t]:
    with _lock:
        entry = opened.get(pointer)
        if entry is None:
            return (cudaError_t.cudaErrorInvalidValue,)
        entry.count -= 1
        if entry.count:
            return (cudaError_t.cudaSuccess,)
        del opened[pointer]
        for name, other in list(_by_name.items()):
            if other is entry:
                del _by_name[name]
    del entry.anchor
    entry.mapping.close()
    return (cudaError_t.cudaSuccess,)


def cudaStreamCreateWithFlags(flags: int) -> tuple[cudaError_t, cudaStream_t]:
    return cudaError_t.cudaSuccess, cudaStream_t()


def cudaStreamSynchronize(stream: cudaStream_t) -> tuple[cudaError_t]:
    return (cudaError_t.cudaSuccess,)


def cudaMemcpyAsync(dst: int, src: int, count: int, kind: cudaMemcpyKind,
                    stream: cudaStream_t) -> tuple[cudaError_t]:
    if not isinstance(stream, cudaStream_t) or kind != cudaMemcpyKind.cudaMemcpyDefault:
        return (cudaError_t.cudaErrorInvalidValue,)
    ctypes.memmove(dst, src, count)
    return (cudaError_t.cudaSuccess,)
