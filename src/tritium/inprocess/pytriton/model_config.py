"""PyTriton's model description: Tensor, ModelConfig, DynamicBatcher, QueuePolicy.

Same names, fields and defaults as PyTriton's `pytriton.model_config`; `generate_config` turns a
binding into Triton's configuration (the `python_function` backend runs it).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...datatypes import NUMPY_DTYPES


@dataclasses.dataclass(frozen=True)
class Tensor:
    """An input or output: its shape without the batch dimension (-1: any), numpy dtype, name."""

    shape: tuple
    dtype: Any
    name: str | None = None
    optional: bool | None = False

    def __post_init__(self) -> None:
        if isinstance(self.dtype, np.dtype):
            object.__setattr__(self, "dtype", self.dtype.type)


class TimeoutAction(enum.Enum):
    REJECT = "REJECT"
    DELAY = "DELAY"


@dataclasses.dataclass
class QueuePolicy:
    timeout_action: TimeoutAction = TimeoutAction.REJECT
    default_timeout_microseconds: int = 0
    allow_timeout_override: bool = False
    max_queue_size: int = 0


@dataclasses.dataclass
class DynamicBatcher:
    max_queue_delay_microseconds: int = 0
    preferred_batch_size: list | None = None
    preserve_ordering: bool = False
    priority_levels: int = 0
    default_priority_level: int = 0
    default_queue_policy: QueuePolicy | None = None
    priority_queue_policy: dict[int, QueuePolicy] | None = None


@dataclasses.dataclass
class ModelConfig:
    batching: bool = True
    max_batch_size: int = 4
    batcher: DynamicBatcher = dataclasses.field(default_factory=DynamicBatcher)
    response_cache: bool = False
    decoupled: bool = False


@dataclasses.dataclass(frozen=True)
class TritonModelConfig:
    """A bound model as PyTriton's decorators and `@triton_context` see it (PyTriton's
    `TritonModelConfig`): every tensor named, in the order bound."""

    model_name: str
    model_version: int = 1
    batching: bool = True
    max_batch_size: int = 4
    batcher: DynamicBatcher | None = None
    decoupled: bool = False
    response_cache: bool = False
    inputs: list[Tensor] = dataclasses.field(default_factory=list)
    outputs: list[Tensor] = dataclasses.field(default_factory=list)


def parse_model_config(config: dict[str, Any]) -> TritonModelConfig:
    """A served model's configuration (its JSON form, as the server returns it) as the
    TritonModelConfig PyTriton's clients answer `model_config` with."""
    def tensors(entries: list[dict[str, Any]]) -> list[Tensor]:
        return [Tensor(name=entry["name"], shape=tuple(int(d) for d in entry.get("dims", [])),
                       dtype=_numpy_type(entry.get("data_type", "")),
                       optional=bool(entry.get("optional", False)))
                for entry in entries]

    max_batch_size = int(config.get("max_batch_size", 0))
    dynamic = config.get("dynamic_batching")
    batcher = None
    if dynamic is not None:
        batcher = DynamicBatcher(
            max_queue_delay_microseconds=int(dynamic.get("max_queue_delay_microseconds", 0)),
            preferred_batch_size=dynamic.get("preferred_batch_size"),
            preserve_ordering=bool(dynamic.get("preserve_ordering", False)),
            priority_levels=int(dynamic.get("priority_levels", 0)),
            default_priority_level=int(dynamic.get("default_priority_level", 0)))
    return TritonModelConfig(
        model_name=config["name"], batching=max_batch_size > 0, max_batch_size=max_batch_size,
        batcher=batcher,
        decoupled=bool(config.get("model_transaction_policy", {}).get("decoupled", False)),
        response_cache=bool(config.get("response_cache", {}).get("enable", False)),
        inputs=tensors(config.get("input", [])), outputs=tensors(config.get("output", [])))


def _numpy_type(data_type: str) -> Any:
    """TYPE_FP32 -> np.float32; TYPE_STRING -> np.bytes_, as PyTriton reads it."""
    name = data_type.removeprefix("TYPE_")
    if name == "STRING":
        return np.bytes_
    return NUMPY_DTYPES[name].type


def named(tensors: Sequence[Tensor], kind: str) -> list[Tensor]:
    """The tensors with PyTriton's names for unnamed ones: INPUT_1, INPUT_2, ... (OUTPUT_n),
    numbered from 1 by position."""
    return [tensor if tensor.name else dataclasses.replace(tensor, name=f"{kind}_{index}")
            for index, tensor in enumerate(tensors, start=1)]


def config_type(dtype: Any) -> str:
    """A numpy dtype as a configuration datatype: np.float32 -> TYPE_FP32, bytes -> TYPE_STRING."""
    dtype = np.dtype(dtype)
    if dtype.kind in ("S", "U", "O"):
        return "TYPE_STRING"
    for name, candidate in NUMPY_DTYPES.items():
        if candidate == dtype and name not in ("BF16", "BYTES"):
            return "TYPE_" + name
    raise ValueError(f"numpy dtype {dtype} has no Triton datatype")


def _queue_policy(policy: QueuePolicy) -> dict[str, Any]:
    return {"timeout_action": policy.timeout_action.value,
            "default_timeout_microseconds": policy.default_timeout_microseconds,
            "allow_timeout_override": policy.allow_timeout_override,
            "max_queue_size": policy.max_queue_size}


def generate_config(name: str, inputs: Sequence[Tensor], outputs: Sequence[Tensor],
                    config: ModelConfig, instances: int, callable_id: str) -> dict[str, Any]:
    """Triton's configuration (its JSON form) for a bound function (tensors named already)."""
    def tensors(items: Sequence[Tensor], kind: str) -> list[dict[str, Any]]:
        found = []
        for tensor in items:
            entry: dict[str, Any] = {"name": tensor.name,
                                     "data_type": config_type(tensor.dtype),
                                     "dims": [int(d) for d in tensor.shape] or [1]}
            if kind == "INPUT" and tensor.optional:
                entry["optional"] = True
            found.append(entry)
        return found

    generated: dict[str, Any] = {
        "name": name,
        "backend": "python_function",
        "max_batch_size": config.max_batch_size if config.batching else 0,
        "input": tensors(inputs, "INPUT"),
        "output": tensors(outputs, "OUTPUT"),
        "instance_group": [{"kind": "KIND_CPU", "count": instances}],
        "parameters": {"callable_id": {"string_value": callable_id}},
    }
    if config.decoupled:
        generated["model_transaction_policy"] = {"decoupled": True}
    if config.response_cache:
        generated["response_cache"] = {"enable": True}
    batcher = config.batcher
    if config.batching and batcher is not None:
        dynamic: dict[str, Any] = {
            "max_queue_delay_microseconds": batcher.max_queue_delay_microseconds,
            "preserve_ordering": batcher.preserve_ordering,
            "priority_levels": batcher.priority_levels,
            "default_priority_level": batcher.default_priority_level,
        }
        if batcher.preferred_batch_size:
            dynamic["preferred_batch_size"] = list(batcher.preferred_batch_size)
        if batcher.default_queue_policy is not None:
            dynamic["default_queue_policy"] = _queue_policy(batcher.default_queue_policy)
        if batcher.priority_queue_policy:
            dynamic["priority_queue_policy"] = {
                str(level): _queue_policy(policy)
                for level, policy in batcher.priority_queue_policy.items()}
        generated["dynamic_batching"] = dynamic
    return generated
