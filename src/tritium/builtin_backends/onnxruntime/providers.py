"""Which ONNX Runtime execution provider an instance's session runs on: the CUDA provider on the
instance's device for KIND_GPU, the CPU provider for every other kind.

ONNX Runtime falls back to the CPU on its own when it cannot start the CUDA provider (a
CPU-only `onnxruntime` package, CUDA or cuDNN libraries it cannot load); a KIND_GPU instance
must not run on the CPU unannounced, so both cases fail the load with what to do instead.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from tritium.backend import ModelInstance, TritonError

from ..framework import on_gpu

CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"


def has_cuda(ort: ModuleType) -> bool:
    """Whether the installed onnxruntime was built with the CUDA provider."""
    return CUDA in ort.get_available_providers()


def session_providers(ort: ModuleType, instance: ModelInstance) -> list[Any]:
    """The `providers` argument of the instance's InferenceSession. The CPU provider follows
    the CUDA one for the operators CUDA lacks, as ONNX Runtime places them."""
    if instance.kind != "KIND_GPU":
        return [CPU]
    if not has_cuda(ort):
        available = ", ".join(ort.get_available_providers())
        raise TritonError.unavailable(
            f"{on_gpu(instance)} but the installed onnxruntime {ort.__version__} has no "
            f"{CUDA} (it has {available}): install onnxruntime-gpu in place of onnxruntime "
            "(pip uninstall onnxruntime && pip install onnxruntime-gpu), or use KIND_CPU"
        )
    return [(CUDA, {"device_id": instance.device_id}), CPU]


def check_session(ort: ModuleType, session: Any, instance: ModelInstance) -> None:
    """A KIND_GPU instance's session really runs the CUDA provider."""
    if instance.kind == "KIND_GPU" and CUDA not in session.get_providers():
        raise TritonError.unavailable(
            f"{on_gpu(instance)} but onnxruntime {ort.__version__} could not start its {CUDA} "
            f"(the session would run on {', '.join(session.get_providers())}): onnxruntime's "
            "error above names the CUDA or cuDNN library it could not load; install the ones "
            "this onnxruntime-gpu is built for (onnxruntime.preload_dlls() loads those of "
            "pip's nvidia packages), or use KIND_CPU"
        )
