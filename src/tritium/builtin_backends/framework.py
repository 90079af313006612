"""Importing a framework (onnxruntime, torch) that is an optional extra of Tritium.

Framework backends import their framework when the first model needs it, not when Tritium
starts: a server without torch still serves everything else, and each pytorch model is reported
UNAVAILABLE with the command that fixes it, as a missing Triton backend would be.
"""

from __future__ import annotations

import importlib
import logging
from pathlib import Path
from types import ModuleType

import numpy as np

from tritium.backend import Backend, Model, ModelInstance, TritonError


def import_framework(module: str, backend: str, extra: str) -> ModuleType:
    """`module`, or UNAVAILABLE naming the pip extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise TritonError.unavailable(
            f"the {backend} backend needs the '{module}' package, which is not installed "
            f"({exc}); install it with: pip install 'tritium[{extra}]'"
        ) from None


def op_libraries(model: Model) -> list[Path]:
    """`model_operations.op_library_filename`: the custom operator libraries the model needs,
    a relative name taken from the model's folder, as `label_filename` is (Triton hands the
    name to dlopen as written; config/model_paths keeps each inside the model's folder or a
    backend directory)."""
    return [model.repository_path / name
            for name in model.config.model_operations.op_library_filename]


def parse_bool(key: str, value: str) -> bool:
    """Triton's ParseBoolValue, for the boolean model parameters framework backends read."""
    lowered = value.strip().lower()
    if lowered in ("true", "on", "1", "yes"):
        return True
    if lowered in ("false", "off", "0", "no"):
        return False
    raise TritonError.invalid_arg(f"failed to convert '{value}' to boolean for parameter '{key}'")


def parse_int(key: str, value: str) -> int:
    """Triton's ParseIntValue, for the integer model parameters framework backends read. The
    messages start as Triton's (users and QA scripts grep them) and name the parameter."""
    try:
        return int(value.strip())
    except ValueError:
        raise TritonError.invalid_arg(
            f"failed to convert '{value}' to integral number for parameter '{key}'"
        ) from None


def parse_unsigned(key: str, value: str) -> int:
    """Triton's ParseUnsignedLongLongValue (sizes in bytes)."""
    try:
        number = int(value.strip())
    except ValueError:
        number = -1
    if number < 0:
        raise TritonError.invalid_arg(
            f"failed to convert '{value}' to unsigned long long integral number for parameter "
            f"'{key}'"
        )
    return number


def utf8_strings(name: str, data: np.ndarray, framework: str) -> list[str]:
    """BYTES elements as Python str, which is how onnxruntime and TorchScript take strings."""
    try:
        return [b.decode("utf-8") if isinstance(b, bytes) else str(b) for b in data.flat]
    except UnicodeDecodeError as exc:
        raise TritonError.invalid_arg(
            f"input '{name}' holds bytes that are not UTF-8 ({exc.reason}); {framework} "
            "strings must be UTF-8"
        ) from None


def on_gpu(instance: ModelInstance) -> str:
    """How a framework's refusal of a KIND_GPU instance starts: which instance, which device."""
    return (
        f"instance {instance.name} of model {instance.model.name} is KIND_GPU "
        f"(device {instance.device_id})"
    )


# The backend API version Triton's C++ backends report at initialization (backend API 1.19,
# Triton 2.51).
BACKEND_API_VERSION = "1.19"


class TritonBackendLog:
    """The lines Triton's C++ framework backends (onnxruntime, pytorch) log at each step of a
    backend's, model's and instance's life, and at VERBOSE for each execution: users and
    Triton's QA tests look for them, so Tritium's framework backends log the same."""

    def __init__(self, log: logging.Logger) -> None:
        self.log = log

    def initialize(self, backend: Backend) -> None:
        self.log.info("TRITONBACKEND_Initialize: %s", backend.name)
        self.log.info("Triton TRITONBACKEND API version: %s", BACKEND_API_VERSION)
        self.log.info("'%s' TRITONBACKEND API version: %s", backend.name, BACKEND_API_VERSION)
        self.log.info("backend configuration:\n%s", backend.config_json())

    def model_initialize(self, model: Model) -> None:
        self.log.info("TRITONBACKEND_ModelInitialize: %s (version %d)", model.name,
                      model.version)

    def model_finalize(self) -> None:
        self.log.info("TRITONBACKEND_ModelFinalize: delete model state")

    def instance_initialize(self, instance: ModelInstance) -> None:
        # TRITONSERVER_InstanceGroupKindString: "CPU", "GPU", "MODEL".
        self.log.info("TRITONBACKEND_ModelInstanceInitialize: %s (%s device %d)", instance.name,
                      instance.kind.removeprefix("KIND_"), instance.device_id)

    def instance_finalize(self) -> None:
        self.log.info("TRITONBACKEND_ModelInstanceFinalize: delete instance state")

    def execute(self, instance: ModelInstance, count: int) -> None:
        if self.log.isEnabledFor(logging.DEBUG):
            self.log.debug("model %s, instance %s, executing %d requests", instance.model.name,
                           instance.name, count)
            self.log.debug("TRITONBACKEND_ModelExecute: Running %s with %d requests",
                           instance.name, count)
