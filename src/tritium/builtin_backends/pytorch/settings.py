"""The model parameters Triton's libtorch backend reads, and what each one switches in torch.

Booleans: DISABLE_OPTIMIZED_EXECUTION, INFERENCE_MODE (default true), DISABLE_CUDNN,
ENABLE_WEIGHT_SHARING, ENABLE_CACHE_CLEANING, and the JIT switches ENABLE_JIT_PROFILING,
ENABLE_JIT_EXECUTOR, ENABLE_TENSOR_FUSER (left as torch has them unless given). Integers:
INTRA_OP_THREAD_COUNT and INTER_OP_THREAD_COUNT, process-wide in torch: as in Triton, every model
that gives a positive intra-op count sets it again (the last load wins), while torch takes the
inter-op count once per process, before any parallel work (later ones are refused by torch, and
logged as a warning here where Triton's backend lets torch's exception fail the load).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from types import ModuleType

from tritonclient.grpc import model_config_pb2 as mc

from ..framework import parse_bool, parse_int

log = logging.getLogger("tritium.backend.pytorch")


@dataclass(frozen=True)
class TorchSettings:
    optimized_execution: bool = True
    inference_mode: bool = True
    cudnn: bool = True
    weight_sharing: bool = False
    cache_cleaning: bool = False
    jit_profiling: bool | None = None
    jit_executor: bool | None = None
    tensor_fuser: bool | None = None

    @classmethod
    def from_config(cls, config: mc.ModelConfig) -> TorchSettings:
        params = {k: v.string_value for k, v in config.parameters.items()}

        def flag(key: str) -> bool | None:
            return parse_bool(key, params[key]) if key in params else None

        def given(value: bool | None, default: bool) -> bool:
            return default if value is None else value

        disable_optimized = flag("DISABLE_OPTIMIZED_EXECUTION")
        disable_cudnn = flag("DISABLE_CUDNN")
        return cls(
            optimized_execution=not given(disable_optimized, False),
            inference_mode=given(flag("INFERENCE_MODE"), True),
            cudnn=not given(disable_cudnn, False),
            weight_sharing=given(flag("ENABLE_WEIGHT_SHARING"), False),
            cache_cleaning=given(flag("ENABLE_CACHE_CLEANING"), False),
            jit_profiling=flag("ENABLE_JIT_PROFILING"),
            jit_executor=flag("ENABLE_JIT_EXECUTOR"),
            tensor_fuser=flag("ENABLE_TENSOR_FUSER"),
        )

    def log(self, config: mc.ModelConfig) -> None:
        """The settings as Triton's libtorch backend logs them for every model (the JSON
        configuration Triton hands a backend always has `parameters`, if only `{}`): the four
        it always has, the others where the configuration gives them."""
        given = config.parameters
        lines = [("Optimized execution", self.optimized_execution),
                 ("Cache Cleaning", self.cache_cleaning),
                 ("Inference Mode", self.inference_mode), ("cuDNN", self.cudnn)]
        for key, what, value in (("ENABLE_TENSOR_FUSER", "Tensor fuser", self.tensor_fuser),
                                 ("ENABLE_WEIGHT_SHARING", "Weight sharing",
                                  self.weight_sharing),
                                 ("ENABLE_JIT_PROFILING", "Jit profiling", self.jit_profiling),
                                 ("ENABLE_JIT_EXECUTOR", "Jit executor", self.jit_executor)):
            if key in given:
                lines.append((what, bool(value)))
        for what, enabled in lines:
            log.info("%s is %s for model instance '%s'", what,
                     "enabled" if enabled else "disabled", config.name)

    def apply(self, torch: ModuleType) -> None:
        """Set the JIT and cuDNN switches before each forward(), as Triton's Execute does: they
        are process-wide in torch, and another model may have set them otherwise."""
        torch._C._set_graph_executor_optimize(self.optimized_execution)
        torch.backends.cudnn.enabled = self.cudnn
        if self.jit_profiling is not None:
            torch._C._jit_set_profiling_mode(self.jit_profiling)
        if self.jit_executor is not None:
            torch._C._jit_set_profiling_executor(self.jit_executor)
        if self.tensor_fuser is not None:
            torch._C._jit_set_texpr_fuser_enabled(self.tensor_fuser)


def apply_thread_counts(torch: ModuleType, config: mc.ModelConfig) -> None:
    """INTRA_OP_THREAD_COUNT / INTER_OP_THREAD_COUNT, when positive, set each time a model gives
    them, as Triton's ParseParameters does."""
    for key, what, setter in (
        ("INTRA_OP_THREAD_COUNT", "Intra op", torch.set_num_threads),
        ("INTER_OP_THREAD_COUNT", "Inter op", torch.set_num_interop_threads),
    ):
        entry = config.parameters.get(key)
        if entry is None:
            continue
        count = parse_int(key, entry.string_value)
        if count <= 0:
            continue
        try:
            setter(count)
        except RuntimeError:  # inter-op threads: once per process, before parallel work
            log.warning("%s could not be set to %d for model instance '%s': torch sets it once "
                        "per process, before any parallel work", key, count, config.name)
            continue
        log.info("%s thread count is set to %d for model instance '%s'", what, count,
                 config.name)
