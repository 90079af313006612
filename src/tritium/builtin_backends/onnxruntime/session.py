"""ONNX Runtime sessions as Triton's ORT backend makes them: the model file, the session options
read from the model configuration, and what the session says about its tensors.

The parameter names (`intra_op_thread_count`, `inter_op_thread_count`, `execution_mode`,
`enable_mem_arena`, `enable_mem_pattern`, `session.use_device_allocator_for_initializers`,
`memory.enable_memory_arena_shrinkage`, `share_session_between_instances`) and
`optimization { graph { level } }` mean what they mean in Triton's onnxruntime backend.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from tritonclient.grpc import model_config_pb2 as mc

from tritium.backend import Model, TritonError

from ..framework import parse_bool, parse_int
from .providers import CPU

DEFAULT_MODEL_FILENAME = "model.onnx"

log = logging.getLogger("tritium.backend.onnxruntime")

# ONNX element types (as onnxruntime's Python API spells them) -> model configuration types.
CONFIG_TYPES: dict[str, int] = {
    "tensor(bool)": mc.TYPE_BOOL,
    "tensor(uint8)": mc.TYPE_UINT8,
    "tensor(uint16)": mc.TYPE_UINT16,
    "tensor(uint32)": mc.TYPE_UINT32,
    "tensor(uint64)": mc.TYPE_UINT64,
    "tensor(int8)": mc.TYPE_INT8,
    "tensor(int16)": mc.TYPE_INT16,
    "tensor(int32)": mc.TYPE_INT32,
    "tensor(int64)": mc.TYPE_INT64,
    "tensor(float16)": mc.TYPE_FP16,
    "tensor(float)": mc.TYPE_FP32,
    "tensor(double)": mc.TYPE_FP64,
    "tensor(string)": mc.TYPE_STRING,
}

_ORT_ERROR = re.compile(r"^\[ONNXRuntimeError\] : (\d+) : \w+ : (.*)$", re.DOTALL)


@dataclass(frozen=True)
class TensorInfo:
    """One model input or output: its ONNX element type and dims (-1 where symbolic)."""

    name: str
    config_type: int  # mc.TYPE_INVALID for types Triton cannot serve
    dims: tuple[int, ...]
    onnx_type: str = ""  # as onnxruntime spells it: "tensor(float)"

    @classmethod
    def from_node(cls, node: Any) -> TensorInfo:
        dims = tuple(d if isinstance(d, int) and d >= 0 else -1 for d in node.shape or ())
        return cls(node.name, CONFIG_TYPES.get(node.type, mc.TYPE_INVALID), dims, node.type)


@dataclass(frozen=True)
class SessionInfo:
    """The tensors a session exposes, in the model's order."""

    inputs: dict[str, TensorInfo]
    outputs: dict[str, TensorInfo]
    # Initializers a request may override: allowed as configured inputs, never required.
    overridable: dict[str, TensorInfo]

    @classmethod
    def of(cls, session: Any) -> SessionInfo:
        def infos(nodes: list[Any]) -> dict[str, TensorInfo]:
            return {n.name: TensorInfo.from_node(n) for n in nodes}

        return cls(
            infos(session.get_inputs()),
            infos(session.get_outputs()),
            infos(session.get_overridable_initializers()),
        )


def ort_error(exc: Exception) -> TritonError:
    """An onnxruntime exception as Triton's ORT backend reports it (RETURN_IF_ORT_ERROR)."""
    text = str(exc)
    match = _ORT_ERROR.match(text)
    if match:
        return TritonError.internal(f"onnx runtime error {match.group(1)}: {match.group(2)}")
    return TritonError.internal(f"onnx runtime error: {text}")


def model_path(model: Model) -> Path:
    """The ONNX file: `<version>/<default_model_filename>`, or `model.onnx` inside it when
    that is a directory (a model with external data files beside it)."""
    path = model.version_path / (model.config.default_model_filename or DEFAULT_MODEL_FILENAME)
    if path.is_dir():
        path = path / DEFAULT_MODEL_FILENAME
    if not path.exists():
        raise TritonError.unavailable(
            f"unable to find '{path}' for model instance '{model.name}'"
        )
    return path


class SessionFactory:
    """Builds sessions for one model: the options are read once from its configuration and
    cloned per instance, as Triton's ModelState holds one OrtSessionOptions."""

    def __init__(self, ort: ModuleType, config: mc.ModelConfig,
                 op_libraries: Sequence[Path] = ()) -> None:
        self.ort = ort
        self.name = config.name
        self._op_libraries = [str(path) for path in op_libraries]
        parameters = {k: v.string_value for k, v in config.parameters.items()}
        self._options_settings = _session_settings(ort, config, parameters)
        self.run_options = ort.RunOptions()
        shrinkage = parameters.get("memory.enable_memory_arena_shrinkage")
        if shrinkage is not None:
            log.debug("Configuring memory.enable_memory_arena_shrinkage to %s", shrinkage)
            self.run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", shrinkage)
        _check_cpu_accelerators(config)

    def create(self, path: Path, providers: Sequence[Any] = (CPU,)) -> Any:
        """A session of the model at `path` on `providers` (providers.py)."""
        options = self.ort.SessionOptions()
        for name, value in self._options_settings.items():
            if name == "config_entries":
                for key, entry in value.items():
                    options.add_session_config_entry(key, entry)
            else:
                setattr(options, name, value)
        try:
            for library in self._op_libraries:  # custom operators the graph uses
                options.register_custom_ops_library(library)
            return self.ort.InferenceSession(
                str(path), sess_options=options, providers=list(providers)
            )
        except Exception as exc:
            raise ort_error(exc) from None


def _session_settings(
    ort: ModuleType, config: mc.ModelConfig, parameters: dict[str, str]
) -> dict[str, Any]:
    """SessionOptions attributes from the configuration, checked once at model load."""
    levels = {
        -1: ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        1: ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        2: ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    }
    settings: dict[str, Any] = {
        "graph_optimization_level": levels.get(
            config.optimization.graph.level, ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        )
    }
    mode = parse_int("execution_mode", parameters.get("execution_mode", "0"))
    if mode not in (0, 1):
        raise TritonError.invalid_arg(
            "Invalid configuration value provided. Expected values for  execution_mode are "
            f"0 or 1 but got {mode} ."
        )
    settings["execution_mode"] = (
        ort.ExecutionMode.ORT_PARALLEL if mode else ort.ExecutionMode.ORT_SEQUENTIAL
    )
    for key in ("intra_op_thread_count", "inter_op_thread_count"):
        count = parse_int(key, parameters.get(key, "0"))
        if count > 0:  # 0: onnxruntime picks
            settings[key.replace("_thread_count", "_num_threads")] = count
    for key, attribute in (
        ("enable_mem_arena", "enable_cpu_mem_arena"),
        ("enable_mem_pattern", "enable_mem_pattern"),
    ):
        if key in parameters:
            settings[attribute] = parse_bool(key, parameters[key])
            log.debug("Configuring %s to %s", key, parameters[key])  # Triton's VERBOSE line
    entry = "session.use_device_allocator_for_initializers"
    if entry in parameters:
        settings["config_entries"] = {entry: parameters[entry]}
    return settings


def _check_cpu_accelerators(config: mc.ModelConfig) -> None:
    """Triton's CPU build knows only OpenVINO, which this backend does not bundle."""
    for accelerator in config.optimization.execution_accelerators.cpu_execution_accelerator:
        raise TritonError.invalid_arg(
            f"unknown Execution Accelerator '{accelerator.name}' is requested"
        )


def share_sessions(config: mc.ModelConfig) -> bool:
    """`share_session_between_instances`: the instances of one group run one session."""
    entry = config.parameters.get("share_session_between_instances")
    return parse_bool("share_session_between_instances", entry.string_value) if entry else False
