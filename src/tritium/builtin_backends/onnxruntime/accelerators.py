"""GPU execution accelerators: what a KIND_GPU instance's session runs on, read from
`optimization { execution_accelerators { gpu_execution_accelerator } }` and the model's CUDA
parameters as Triton's onnxruntime backend reads them.

`tensorrt` puts ONNX Runtime's TensorRT provider before the CUDA one, its parameters mapped to
the provider's options; `cuda` adds options to the CUDA provider; any other name fails the load.
The model parameters `cudnn_conv_algo_search`, `gpu_mem_limit`, `arena_extend_strategy` and
`do_copy_in_default_stream` (Triton's older way to set CUDA options) are applied after the
accelerators' and win over them. A KIND_CPU instance never reads any of this, as in Triton, so a
configuration written for GPUs still loads on a machine without one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tritonclient.grpc import model_config_pb2 as mc

from tritium.backend import TritonError

from ..framework import parse_bool, parse_int, parse_unsigned

TENSORRT = "TensorrtExecutionProvider"


# Triton's TensorRT accelerator parameters: the provider option each sets, and how its value
# is checked (None: any text); the value itself is handed to the provider as written.
_Check = Callable[[str, str], object] | None
_TENSORRT_PARAMETERS: dict[str, tuple[str, _Check]] = {
    "max_workspace_size_bytes": ("trt_max_workspace_size", parse_unsigned),
    "int8_calibration_table_name": ("trt_int8_calibration_table_name", None),
    "int8_use_native_calibration_table": ("trt_int8_use_native_calibration_table", parse_bool),
    **{name: (name, parse_bool) for name in (
        "trt_dla_enable", "trt_engine_cache_enable", "trt_dump_subgraphs",
        "trt_force_sequential_engine_build", "trt_context_memory_sharing_enable",
        "trt_layer_norm_fp32_fallback", "trt_timing_cache_enable", "trt_force_timing_cache",
        "trt_detailed_build_log", "trt_build_heuristics_enable", "trt_sparsity_enable",
        "trt_cuda_graph_enable", "trt_dump_ep_context_model")},
    **{name: (name, parse_int) for name in (
        "trt_max_partition_iterations", "trt_min_subgraph_size", "trt_dla_core",
        "trt_builder_optimization_level", "trt_auxiliary_streams", "trt_ep_context_embed_mode")},
    **{name: (name, None) for name in (
        "trt_engine_cache_path", "trt_engine_cache_prefix", "trt_timing_cache_path",
        "trt_tactic_sources", "trt_extra_plugin_lib_paths", "trt_profile_min_shapes",
        "trt_profile_max_shapes", "trt_profile_opt_shapes", "trt_ep_context_file_path")},
}
_PRECISION_OPTIONS = {"FP16": "trt_fp16_enable", "INT8": "trt_int8_enable", "FP32": ""}

# The CUDA options the model parameters set: parameter -> (its values, the default when the
# model has parameters but not this one). gpu_mem_limit and do_copy_in_default_stream pass
# through as written.
_CUDA_PARAMETER_CHOICES: dict[str, tuple[tuple[str, ...], str]] = {
    "cudnn_conv_algo_search": (("EXHAUSTIVE", "HEURISTIC", "DEFAULT"), "EXHAUSTIVE"),
    "arena_extend_strategy": (("kNextPowerOfTwo", "kSameAsRequested"), "kNextPowerOfTwo"),
}
_CUDA_PARAMETER_DEFAULTS = {
    "gpu_mem_limit": str(2**64 - 1),  # SIZE_MAX: no limit
    "do_copy_in_default_stream": "1",
}
_CUDA_BOOLEAN_OPTIONS = ("do_copy_in_default_stream", "use_ep_level_unified_stream")


@dataclass
class GpuAccelerators:
    """The provider options of a KIND_GPU instance's session (`device_id` added per instance)."""

    cuda: dict[str, str] = field(default_factory=dict)
    tensorrt: dict[str, str] | None = None  # None: no TensorRT accelerator

    def providers(self, device_id: int) -> list[tuple[str, dict[str, str]]]:
        """TensorRT (when asked for), then CUDA; the caller adds the CPU provider last."""
        device = {"device_id": str(device_id)}
        chosen = [("CUDAExecutionProvider", {**self.cuda, **device})]
        if self.tensorrt is not None:
            chosen.insert(0, (TENSORRT, {**self.tensorrt, **device}))
        return chosen


def gpu_accelerators(config: mc.ModelConfig) -> GpuAccelerators:
    """The configuration's GPU accelerators, checked as Triton's backend checks them when it
    creates a KIND_GPU instance: an unknown accelerator or TensorRT parameter, or a value that
    does not parse, fails the load with INVALID_ARG."""
    chosen = GpuAccelerators()
    for accelerator in config.optimization.execution_accelerators.gpu_execution_accelerator:
        parameters = dict(accelerator.parameters)
        if accelerator.name == "tensorrt":
            chosen.tensorrt = _tensorrt_options(parameters)
        elif accelerator.name == "cuda":
            for key in _CUDA_BOOLEAN_OPTIONS:
                if key in parameters:
                    parse_bool(key, parameters[key])
            chosen.cuda.update({k: v for k, v in parameters.items() if v})
        else:
            raise TritonError.invalid_arg(
                f"unknown Execution Accelerator '{accelerator.name}' is requested"
            )
    if config.parameters:
        chosen.cuda.update(_cuda_parameters({k: v.string_value
                                             for k, v in config.parameters.items()}))
    return chosen


def _tensorrt_options(parameters: dict[str, str]) -> dict[str, str]:
    options: dict[str, str] = {}
    for key, value in parameters.items():
        if key == "precision_mode":
            if value not in _PRECISION_OPTIONS:
                raise TritonError.invalid_arg(f"unsupported precision mode '{value}' is requested")
            option, value = _PRECISION_OPTIONS[value], "1"
        elif key in _TENSORRT_PARAMETERS:
            option, check = _TENSORRT_PARAMETERS[key]
            if check is not None:
                check(key, value)
        else:
            raise TritonError.invalid_arg(
                f"unknown parameter '{key}' is provided for TensorRT Execution Accelerator"
            )
        if option and value:
            options[option] = value
    return options


def _cuda_parameters(parameters: dict[str, str]) -> dict[str, str]:
    """The CUDA options the model's parameters set, with Triton's defaults for the missing."""
    options = {key: parameters.get(key, default)
               for key, default in _CUDA_PARAMETER_DEFAULTS.items()}
    for key, (choices, default) in _CUDA_PARAMETER_CHOICES.items():
        if key not in parameters:
            options[key] = default
            continue
        index = parse_int(key, parameters[key])
        if not 0 <= index < len(choices):
            raise TritonError.invalid_arg(f"unsupported {key} value '{index}' is requested")
        options[key] = choices[index]
    return options
