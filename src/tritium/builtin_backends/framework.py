"""Importing a framework (onnxruntime, torch) that is an optional extra of Tritium.

Framework backends import their framework when the first model needs it, not when Tritium
starts: a server without torch still serves everything else, and each pytorch model is reported
UNAVAILABLE with the command that fixes it, as a missing Triton backend would be.
"""

from __future__ import annotations

import importlib
from types import ModuleType

import numpy as np

from tritium.backend import ModelInstance, TritonError


def import_framework(module: str, backend: str, extra: str) -> ModuleType:
    """`module`, or UNAVAILABLE naming the pip extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise TritonError.unavailable(
            f"the {backend} backend needs the '{module}' package, which is not installed "
            f"({exc}); install it with: pip install 'tritium[{extra}]'"
        ) from None


def parse_bool(key: str, value: str) -> bool:
    """Triton's ParseBoolValue, for the boolean model parameters framework backends read."""
    lowered = value.strip().lower()
    if lowered in ("true", "on", "1", "yes"):
        return True
    if lowered in ("false", "off", "0", "no"):
        return False
    raise TritonError.invalid_arg(
        f"failed to convert '{value}' to a boolean value for parameter '{key}'"
    )


def parse_int(key: str, value: str) -> int:
    """Triton's ParseIntValue, for the integer model parameters framework backends read."""
    try:
        return int(value.strip())
    except ValueError:
        raise TritonError.invalid_arg(
            f"failed to convert '{value}' to an integral number for parameter '{key}'"
        ) from None


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
