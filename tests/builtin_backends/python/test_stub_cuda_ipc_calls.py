"""The stub's CUDA IPC calls (stub/cuda_ipc.py) against a recording stand-in for cuda-python's
driver binding, on CPU-only machines: the handle's 64 bytes go through its address (cuda-bindings
13 has no `reserved` member), every driver call runs with the allocation's primary context
current (pushed, then popped: the driver API needs a current context, which a stub thread need
not have), the mapping retains that context until it is unmapped there, exactly once, and an
export that IPC cannot do fails cleanly (a RuntimeError, on which the caller sends a host copy).
The real calls run in test_python_backend_gpu_tensors.py on a GPU."""

from __future__ import annotations

import ctypes
import enum
import gc
import sys
import types
from typing import Any

import numpy as np
import pytest

from tritium.builtin_backends.python.stub import cuda_ipc
from tritium.builtin_backends.python.wire.cuda_ipc import CudaIpcArray
from triton_python_backend_utils.device_tensor import DeviceTensor

BASE, HANDLE = 0x1000, bytes(range(64))


class FakeDriver(types.ModuleType):
    """The driver calls the stub makes, with cuda-bindings 13's shapes: (CUresult, values...)."""

    class CUresult(enum.IntEnum):
        CUDA_SUCCESS = 0
        CUDA_ERROR_INVALID_VALUE = 1
        CUDA_ERROR_INVALID_CONTEXT = 201

    class CUipcMem_flags(enum.IntEnum):
        CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1

    class CUdeviceptr(int):
        pass

    class CUipcMemHandle:
        """Like cuda-bindings 13's: no `reserved`, only the address of its bytes."""

        __slots__ = ("_bytes",)

        def __init__(self) -> None:
            self._bytes = ctypes.create_string_buffer(64)

        def getPtr(self) -> int:
            return ctypes.addressof(self._bytes)

    def __init__(self) -> None:
        super().__init__("cuda.bindings.driver")
        self.current: list[str] = []  # the thread's context stack
        self.retained: dict[int, int] = {}
        self.log: list[tuple] = []

    def cuInit(self, flags: int) -> tuple:
        return (self.CUresult.CUDA_SUCCESS,)

    def cuDeviceGet(self, ordinal: int) -> tuple:
        return self.CUresult.CUDA_SUCCESS, ordinal

    def cuDevicePrimaryCtxRetain(self, device: int) -> tuple:
        self.retained[device] = self.retained.get(device, 0) + 1
        return self.CUresult.CUDA_SUCCESS, f"primary{device}"

    def cuDevicePrimaryCtxRelease(self, device: int) -> tuple:
        self.retained[device] -= 1
        return (self.CUresult.CUDA_SUCCESS,)

    def cuCtxPushCurrent(self, context: str) -> tuple:
        self.current.append(context)
        return (self.CUresult.CUDA_SUCCESS,)

    def cuCtxPopCurrent(self) -> tuple:
        return self.CUresult.CUDA_SUCCESS, self.current.pop()

    def _context(self) -> str | None:
        return self.current[-1] if self.current else None

    def cuMemGetAddressRange(self, pointer: Any) -> tuple:
        if not self.current:
            return self.CUresult.CUDA_ERROR_INVALID_CONTEXT, None, None
        if not BASE <= int(pointer) < BASE + 4096:
            return self.CUresult.CUDA_ERROR_INVALID_VALUE, None, None
        return self.CUresult.CUDA_SUCCESS, self.CUdeviceptr(BASE), 4096

    def cuIpcGetMemHandle(self, base: Any) -> tuple:
        self.log.append(("export", int(base), self._context()))
        handle = self.CUipcMemHandle()
        ctypes.memmove(handle.getPtr(), HANDLE, 64)
        return self.CUresult.CUDA_SUCCESS, handle

    def cuIpcOpenMemHandle(self, handle: Any, flags: int) -> tuple:
        self.log.append(("open", ctypes.string_at(handle.getPtr(), 64), self._context()))
        return self.CUresult.CUDA_SUCCESS, self.CUdeviceptr(0x9000)

    def cuIpcCloseMemHandle(self, pointer: Any) -> tuple:
        self.log.append(("close", int(pointer), self._context()))
        return (self.CUresult.CUDA_SUCCESS,)


class FakeCupy(types.ModuleType):
    """Just what the stub asks of cupy: synchronize a device, view an interface."""

    def __init__(self) -> None:
        super().__init__("cupy")

        class Device:
            def __init__(self, device_id: int) -> None:
                pass

            def synchronize(self) -> None:
                pass

            def __enter__(self) -> None:
                pass

            def __exit__(self, *exc: object) -> None:
                pass

        self.cuda = types.SimpleNamespace(Device=Device)

    @staticmethod
    def asarray(interface: Any) -> Any:
        return interface


@pytest.fixture
def driver(monkeypatch: pytest.MonkeyPatch) -> FakeDriver:
    fake = FakeDriver()
    bindings = types.ModuleType("cuda.bindings")
    bindings.driver = fake  # type: ignore[attr-defined]
    cuda = types.ModuleType("cuda")
    cuda.bindings = bindings  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cuda", cuda)
    monkeypatch.setitem(sys.modules, "cuda.bindings", bindings)
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", fake)
    monkeypatch.setitem(sys.modules, "cupy", FakeCupy())
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    return fake


def device_tensor(pointer: int, device_id: int = 1) -> DeviceTensor:
    obj = types.SimpleNamespace(data=types.SimpleNamespace(ptr=pointer))
    return DeviceTensor(obj, device_id, (2, 3), np.dtype(np.float32))


def test_export_then_open_and_close(driver: FakeDriver) -> None:
    array = cuda_ipc.export(device_tensor(BASE + 16), "FP32")
    assert (array.handle, array.offset, array.device_id) == (HANDLE, 16, 1)
    assert driver.log == [("export", BASE, "primary1")]
    assert driver.current == [] and driver.retained == {1: 0}

    tensor = cuda_ipc.open_tensor(array)
    assert tensor.obj.__cuda_array_interface__["data"] == (0x9000 + 16, False)
    assert driver.log[-1] == ("open", HANDLE, "primary1")
    assert driver.current == [] and driver.retained == {1: 1}  # held by the mapping

    again = cuda_ipc.open_tensor(array)  # a second tensor of the same allocation shares it
    assert [entry[0] for entry in driver.log].count("open") == 1
    del tensor, again
    gc.collect()
    assert driver.log[-1] == ("close", 0x9000, "primary1")
    assert [entry[0] for entry in driver.log].count("close") == 1
    assert driver.current == [] and driver.retained == {1: 0}


def test_memory_ipc_cannot_export_fails_cleanly(driver: FakeDriver) -> None:
    with pytest.raises(RuntimeError, match="cuMemGetAddressRange failed"):
        cuda_ipc.export(device_tensor(0), "FP32")  # an empty tensor has no allocation
    assert driver.current == [] and driver.retained == {1: 0}


def test_a_handle_of_the_wrong_size_is_refused(driver: FakeDriver) -> None:
    with pytest.raises(RuntimeError, match="64 bytes"):
        cuda_ipc.open_tensor(CudaIpcArray(b"short", 0, 0, "FP32", (1,)))
    assert driver.log == []
