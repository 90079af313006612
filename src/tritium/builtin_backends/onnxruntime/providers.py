"""Which ONNX Runtime execution providers an instance's session runs on: for KIND_GPU the CUDA
provider on the instance's device, after the TensorRT one when the configuration asks for it
(accelerators.py); the CPU provider for every other kind.

ONNX Runtime falls back to the CPU on its own when it cannot start the CUDA provider (a
CPU-only `onnxruntime` package, CUDA or cuDNN libraries it cannot load); a KIND_GPU instance
must not run on the CPU unannounced, so both cases fail the load with what to do instead; so
does a TensorRT accelerator whose provider is missing or cannot start (ONNX Runtime would run
the model on CUDA alone). The lines Triton's backend logs for the providers it sets are logged
once the session really runs on them.
"""

from __future__ import annotations

import logging
from types import ModuleType
from typing import Any

from tritium.backend import ModelInstance, TritonError

from ..framework import on_gpu
from .accelerators import TENSORRT, gpu_accelerators

log = logging.getLogger("tritium.backend.onnxruntime")

CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"


def has_cuda(ort: ModuleType) -> bool:
    """Whether the installed onnxruntime was built with the CUDA provider."""
    return CUDA in ort.get_available_providers()


def session_providers(ort: ModuleType, instance: ModelInstance) -> list[Any]:
    """The `providers` argument of the instance's InferenceSession. The CPU provider follows
    the GPU ones for the operators they lack, as ONNX Runtime places them."""
    if instance.kind != "KIND_GPU":
        return [CPU]
    chosen = gpu_accelerators(instance.model.config).providers(instance.device_id)
    available = ort.get_available_providers()
    for provider, _ in reversed(chosen):  # CUDA first: TensorRT needs it too
        if provider not in available:
            raise TritonError.unavailable(
                f"{on_gpu(instance)} but the installed onnxruntime {ort.__version__} has no "
                f"{provider} (it has {', '.join(available)}): {_INSTALL[provider]}"
            )
    return [*chosen, CPU]


_INSTALL = {
    CUDA: "install onnxruntime-gpu in place of onnxruntime (pip uninstall onnxruntime && pip "
          "install onnxruntime-gpu), or use KIND_CPU",
    TENSORRT: "install an onnxruntime-gpu built with TensorRT, or remove the 'tensorrt' "
              "execution accelerator",
}


def check_session(ort: ModuleType, session: Any, instance: ModelInstance,
                  providers: list[Any]) -> None:
    """A KIND_GPU instance's session really runs the GPU providers it was given; then the
    lines Triton's backend logs for them."""
    if instance.kind != "KIND_GPU":
        return
    started = session.get_providers()
    for provider, _ in providers[:-1]:
        if provider not in started:
            raise TritonError.unavailable(
                f"{on_gpu(instance)} but onnxruntime {ort.__version__} could not start its "
                f"{provider} (the session would run on {', '.join(started)}): "
                f"{_CANNOT_START[provider]}"
            )
    name, device = instance.model.name, instance.device_id
    if providers[0][0] == TENSORRT:
        log.debug("TensorRT Execution Accelerator is set for '%s' on device %d", name, device)
    options = session.get_provider_options().get(CUDA, {})
    log.debug("CUDA Execution Accelerator is set for '%s' on device %d with options: %s",
              name, device, ";".join(f"{key}={value}" for key, value in options.items()))


_CANNOT_START = {
    CUDA: "onnxruntime's error above names the CUDA or cuDNN library it could not load; "
          "install the ones this onnxruntime-gpu is built for (onnxruntime.preload_dlls() "
          "loads those of pip's nvidia packages), or use KIND_CPU",
    TENSORRT: "onnxruntime's error above names the TensorRT library it could not load; install "
              "the TensorRT this onnxruntime-gpu is built for (pip install tensorrt), or remove "
              "the 'tensorrt' execution accelerator",
}
