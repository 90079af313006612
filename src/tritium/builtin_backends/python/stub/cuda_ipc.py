"""CUDA IPC in the stubs, with cuda-python's driver binding (`cuda.bindings.driver`): a BLS
caller exports the GPU memory of an input (`export`), the callee's stub maps it (`open_tensor`)
and unmaps it when the last tensor viewing it goes. Nothing is copied through host memory.

The IPC handle names a whole allocation (frameworks hand out pieces of bigger ones), so the
description carries the tensor's offset from the allocation's base. The caller keeps the tensor
alive until its BLS call has its final response (`BlsCall.keep`), as Triton requires.

Imported only when a GPU tensor goes to, or comes from, another model.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
import threading
import weakref
from collections.abc import Iterator
from typing import Any

from ..wire.cuda_ipc import CudaIpcArray

# sizeof(CUipcMemHandle)
HANDLE_SIZE = 64


def available() -> bool:
    """Whether this stub can export and open CUDA IPC handles."""
    try:
        from cuda.bindings import driver  # noqa: F401
    except ImportError:
        return False
    return True


def _check(result: tuple, call: str) -> Any:
    from cuda.bindings import driver

    error, *values = result
    if error != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{call} failed: {getattr(error, 'name', error)}")
    return values[0] if len(values) == 1 else values


def export(device: Any, datatype: str) -> CudaIpcArray:
    """The IPC description of a `DeviceTensor` (its producer's work finished first)."""
    from cuda.bindings import driver

    obj = device.obj
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        torch.cuda.synchronize(obj.device)
        pointer = obj.data_ptr()
    else:
        import cupy

        cupy.cuda.Device(device.device_id).synchronize()
        pointer = obj.data.ptr
    with _primary_context(device.device_id):
        base, _size = _check(driver.cuMemGetAddressRange(driver.CUdeviceptr(pointer)),
                             "cuMemGetAddressRange")
        handle = _check(driver.cuIpcGetMemHandle(base), "cuIpcGetMemHandle")
    # cuda-bindings 13 has no `reserved` member: the handle's bytes are reached by address.
    return CudaIpcArray(ctypes.string_at(handle.getPtr(), HANDLE_SIZE), pointer - int(base),
                        device.device_id, datatype, device.shape)


@contextlib.contextmanager
def _primary_context(device_id: int) -> Iterator[tuple[Any, Any]]:
    """(CUdevice, CUcontext) of `device_id`'s primary context (the one torch, cupy and the CUDA
    runtime use), made current on this thread for the driver calls inside, whatever was
    current before (another device's context, or none on a thread that has not touched CUDA:
    the driver API needs one); the thread's current context is restored afterwards."""
    from cuda.bindings import driver

    _check(driver.cuInit(0), "cuInit")
    device = _check(driver.cuDeviceGet(device_id), "cuDeviceGet")
    context = _check(driver.cuDevicePrimaryCtxRetain(device), "cuDevicePrimaryCtxRetain")
    try:
        _check(driver.cuCtxPushCurrent(context), "cuCtxPushCurrent")
        try:
            yield device, context
        finally:
            driver.cuCtxPopCurrent()
    finally:
        driver.cuDevicePrimaryCtxRelease(device)


class _Mapping:
    """One mapped IPC allocation, shared by every tensor of it this stub holds (an allocation
    can be mapped once per process); unmapped, in the context that mapped it, when the last of
    them goes."""

    def __init__(self, handle_bytes: bytes, device_id: int) -> None:
        from cuda.bindings import driver

        if len(handle_bytes) != HANDLE_SIZE:
            raise RuntimeError(f"a CUDA IPC handle has {HANDLE_SIZE} bytes, not "
                               f"{len(handle_bytes)}")
        handle = driver.CUipcMemHandle()
        # cuda-bindings 13 has no `reserved` member: the handle's bytes are reached by address.
        ctypes.memmove(handle.getPtr(), handle_bytes, HANDLE_SIZE)
        # Mapped in the primary context of the allocation's device, which the mapping keeps
        # retained until it is unmapped there.
        with _primary_context(device_id) as (device, context):
            _check(driver.cuDevicePrimaryCtxRetain(device), "cuDevicePrimaryCtxRetain")
            try:
                self.base = _check(driver.cuIpcOpenMemHandle(
                    handle, driver.CUipcMem_flags.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
                    "cuIpcOpenMemHandle")
            except BaseException:
                driver.cuDevicePrimaryCtxRelease(device)
                raise
        weakref.finalize(self, _close, device, context, self.base)


_lock = threading.Lock()
_mappings: weakref.WeakValueDictionary[bytes, _Mapping] = weakref.WeakValueDictionary()


class _View:
    """A tensor in a mapped allocation, shown to torch or cupy through
    `__cuda_array_interface__` (they keep it, and so the mapping, alive)."""

    def __init__(self, array: CudaIpcArray) -> None:
        with _lock:
            mapping = _mappings.get(array.handle)
            if mapping is None:
                mapping = _mappings[array.handle] = _Mapping(array.handle, array.device_id)
        self.mapping = mapping
        self.__cuda_array_interface__ = {
            "shape": array.shape,
            "typestr": array.dtype.str,
            "data": (int(mapping.base) + array.offset, False),
            "strides": None,
            "version": 3,
        }


def _close(device: Any, context: Any, base: Any) -> None:
    """Unmap an allocation in the context that mapped it, then let that context go."""
    from cuda.bindings import driver

    driver.cuCtxPushCurrent(context)
    try:
        driver.cuIpcCloseMemHandle(base)
    finally:
        driver.cuCtxPopCurrent()
        driver.cuDevicePrimaryCtxRelease(device)


def open_tensor(array: CudaIpcArray) -> Any:
    """The described GPU memory as a `DeviceTensor` (a torch tensor when the model has
    imported torch, else a cupy array)."""
    from triton_python_backend_utils.device_tensor import DeviceTensor

    if not available():
        raise RuntimeError(
            "a GPU input came from a BLS caller by CUDA IPC: install cuda-python "
            "(cuda.bindings) in this model's environment to map it"
        )
    memory = _View(array)
    torch = sys.modules.get("torch")
    if torch is not None:
        obj = torch.as_tensor(memory, device=f"cuda:{array.device_id}")
    else:
        import cupy

        with cupy.cuda.Device(array.device_id):
            obj = cupy.asarray(memory)
    return DeviceTensor(obj, array.device_id, array.shape, array.dtype)
