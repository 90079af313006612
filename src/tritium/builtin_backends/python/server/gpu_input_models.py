"""Which loaded python models (of any python-based backend) take GPU inputs
(FORCE_CPU_ONLY_INPUT_TENSORS "no"): a BLS caller sends those its GPU tensors by CUDA IPC, and
every other model gets host memory (see `wire/cuda_ipc.py`)."""

from __future__ import annotations

from collections import Counter

_loaded: Counter[str] = Counter()


def add(name: str) -> None:
    _loaded[name] += 1


def remove(name: str) -> None:
    _loaded[name] -= 1


def takes_gpu_inputs(name: str) -> bool:
    """Whether a loaded python model `name` takes GPU inputs."""
    return _loaded[name] > 0
