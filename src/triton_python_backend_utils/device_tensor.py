"""GPU memory held by a ``Tensor``: the CUDA tensor of the framework that made it (torch or
cupy), kept as it is, so that DLPack hands the same memory back on the device and the stub
copies it to the host only where it must (the wire to a client).

A model that never passes a CUDA tensor never gets here, and nothing here imports a framework
the model has not imported already, except cupy to adopt a CUDA tensor of a third framework
when torch is not loaded.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import numpy as np

from .errors import TritonModelException

KDL_CUDA = 2
NOT_CONTIGUOUS = (
    "DLPack tensor is not contiguous. Only contiguous DLPack tensors that are stored in C-Order "
    "are supported."
)


class DeviceTensor:
    """A contiguous CUDA tensor (torch.Tensor or cupy.ndarray) on `device_id`."""

    __slots__ = ("obj", "device_id", "shape", "dtype")

    def __init__(self, obj: Any, device_id: int, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.obj = obj
        self.device_id = device_id
        self.shape = shape
        self.dtype = dtype

    @classmethod
    def adopt(cls, producer: Any) -> DeviceTensor:
        """Take a CUDA DLPack producer (an object with ``__dlpack__``, or a capsule) without
        copying it; another framework's tensor is viewed through torch or cupy."""
        obj = _framework_tensor(producer)
        if _is_torch(obj):
            obj = obj.detach()  # DLPack refuses tensors that require grad
            if not obj.is_contiguous():
                raise TritonModelException(NOT_CONTIGUOUS)
            try:
                dtype = np.dtype(str(obj.dtype).removeprefix("torch."))
            except TypeError:
                raise TritonModelException(
                    f"GPU tensor dtype {obj.dtype} is not supported."
                ) from None
        else:
            if not obj.flags.c_contiguous:
                raise TritonModelException(NOT_CONTIGUOUS)
            dtype = np.dtype(obj.dtype)
        device_type, device_id = obj.__dlpack_device__()
        if int(device_type) != KDL_CUDA:
            raise TritonModelException(
                f"DLDevice type {int(device_type)} is not support by Python backend."
            )
        return cls(obj, int(device_id), tuple(int(d) for d in obj.shape), dtype)

    def to_host(self) -> np.ndarray:
        """A host copy (waits for the work that produces the tensor)."""
        obj = self.obj
        array = obj.cpu().numpy() if _is_torch(obj) else obj.get()
        return np.ascontiguousarray(array)

    def __dlpack__(self, stream: Any = None, **kwargs: Any) -> object:
        return self.obj.__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (KDL_CUDA, self.device_id)


def _is_torch(obj: Any) -> bool:
    return type(obj).__module__.startswith("torch")


def _framework_tensor(producer: Any) -> Any:
    """`producer` as a torch.Tensor or cupy.ndarray sharing its memory."""
    root = type(producer).__module__.split(".")[0]
    if root in ("torch", "cupy"):
        return producer
    what = f"a CUDA tensor of type '{type(producer).__name__}'"
    framework: Any = sys.modules.get("torch")
    if framework is None:
        try:
            framework = importlib.import_module("cupy")
        except ImportError:
            raise TritonModelException(
                f"{what} needs torch or cupy in the model's environment to be used as a "
                "pb_utils.Tensor"
            ) from None
    try:
        return framework.from_dlpack(producer)
    except Exception as exc:
        raise TritonModelException(
            f"{what} cannot be used as a pb_utils.Tensor ({framework.__name__}.from_dlpack: "
            f"{exc})"
        ) from None
