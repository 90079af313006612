"""Where a pytorch instance runs: `cuda:<device_id>` for a KIND_GPU instance, else the CPU.

A KIND_GPU instance loads its module onto its GPU and runs on a CUDA stream of its own, so
instances sharing a GPU do not queue behind each other on one stream; each input crosses to the
GPU once (from pinned memory, asynchronously) and each output comes back once. A KIND_CPU
instance runs on the CPU. A KIND_MODEL instance places itself, as in Triton: its module is loaded
where its tensors were saved (no map_location), its inputs are given on the CPU and forward()
moves them where it wants; with CUDA devices present, each execution waits for all of them and
cache cleaning empties their cache. A KIND_GPU instance whose torch cannot reach its device fails
to load with the fix in the message: it never falls back to the CPU.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext
from types import ModuleType
from typing import Any

import numpy as np

from tritium.backend import ModelInstance, TritonError

from ..framework import on_gpu


class TorchDevice:
    """One instance's device, and the stream its work runs on (None on the CPU)."""

    def __init__(self, torch: ModuleType, instance: ModelInstance) -> None:
        self.torch = torch
        self._stream: Any = None
        self.places_itself = instance.kind == "KIND_MODEL"
        # The CUDA devices a KIND_MODEL module may use, all waited for (Triton: one stream each).
        self._model_gpus = torch.cuda.device_count() if self.places_itself else 0
        if instance.kind == "KIND_GPU":
            check_cuda_device(torch, instance)
            self.device = torch.device("cuda", instance.device_id)
            self._stream = torch.cuda.Stream(self.device)
        else:
            self.device = torch.device("cpu")

    @property
    def on_gpu(self) -> bool:
        return self._stream is not None

    @property
    def load_location(self) -> Any:
        """torch.jit.load's map_location: the instance's device, or None for KIND_MODEL (each
        tensor where it was saved)."""
        return None if self.places_itself else self.device

    def running(self) -> AbstractContextManager[Any]:
        """The instance's device and stream made current for this thread while work is queued
        (torch keeps both per thread)."""
        if self._stream is None:
            return nullcontext()
        return self.torch.cuda.stream(self._stream)

    def tensor(self, data: np.ndarray) -> Any:
        """A host array as a tensor on this device: the CPU takes it as it is (a copy when it
        is read-only, as request data is, because torch wants memory it may write); a GPU gets
        it in one copy from pinned memory, queued on the instance's stream."""
        torch = self.torch
        if self._stream is None:
            return torch.from_numpy(data if data.flags.writeable else data.copy())
        staging = torch.empty(data.shape, dtype=getattr(torch, data.dtype.name), pin_memory=True)
        staging.numpy()[...] = data
        return staging.to(self.device, non_blocking=True)

    def synchronize(self) -> None:
        """Wait for the work queued on the instance's stream, or for a KIND_MODEL instance on
        every CUDA device (nothing to wait for on the CPU)."""
        if self._stream is not None:
            self._stream.synchronize()
        for index in range(self._model_gpus):
            self.torch.cuda.synchronize(index)

    def empty_cache(self) -> None:
        """ENABLE_CACHE_CLEANING: after each execution, give the GPU memory torch caches but
        no tensor holds back to the driver (process-wide in torch, as in Triton)."""
        if self._stream is not None or self._model_gpus:
            self.torch.cuda.empty_cache()


def check_cuda_device(torch: ModuleType, instance: ModelInstance) -> None:
    """A KIND_GPU instance needs a CUDA build of torch that sees its device id."""
    where = on_gpu(instance)
    if not torch.backends.cuda.is_built():
        raise TritonError.unavailable(
            f"{where} but the installed torch {torch.__version__} has no CUDA: install a CUDA "
            "build of torch, or use KIND_CPU"
        )
    count = torch.cuda.device_count()
    if instance.device_id >= count:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        shown = "" if visible is None else f" with CUDA_VISIBLE_DEVICES={visible!r}"
        raise TritonError.unavailable(
            f"{where} but torch {torch.__version__} (CUDA {torch.version.cuda}) sees {count} "
            f"CUDA device(s){shown}: check the NVIDIA driver and CUDA_VISIBLE_DEVICES, or use "
            "KIND_CPU"
        )
