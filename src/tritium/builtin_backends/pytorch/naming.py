"""Which forward() argument each configured input feeds, and which returned value each configured
output reads: Triton's libtorch naming conventions, checked when an instance loads.

Inputs: every configured name is a forward argument (FORWARD_ARGUMENT); else every name is
`<name>__<index>` (NAMED_INDEX); else the configuration's order is the argument order
(STRICT_CONFIG_ORDERING). A single `Dict[str, Tensor]` argument takes every input by name.
Outputs: `<name>__<index>` when every name has that form, else the configuration's order.
A `batch_input` target follows the inputs' convention: it is a forward argument's name, a
`<name>__<index>`, or (strict ordering) comes after the configured inputs, in the configuration's
order. A stateful model's sequence control inputs are always `<name>__<index>`; with implicit state,
every input, output and state must be `<name>__<index>` (Triton's rules for both).
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from typing import Any

from tritonclient.grpc import model_config_pb2 as mc

from tritium.backend import TritonError

from ..sequence_io import SequenceTensors

log = logging.getLogger("tritium.backend.pytorch")

DELIMITER = "__"


class NamingConvention(enum.Enum):
    FORWARD_ARGUMENT = "FORWARD_ARGUMENT"
    NAMED_INDEX = "NAMED_INDEX"
    STRICT_CONFIG_ORDERING = "STRICT_CONFIG_ORDERING"


@dataclass(frozen=True)
class Signature:
    """How forward() takes its inputs: by position (`arguments` names them) or one dict."""

    arguments: tuple[str, ...]
    dict_input: bool


def forward_signature(module: Any, model: str, expected_inputs: int) -> Signature:
    """ValidateInputs' reading of the forward schema (the `self` argument skipped)."""
    arguments = list(module.forward.schema.arguments)
    if arguments and arguments[0].type.kind() == "ClassType":
        arguments = arguments[1:]
    if len(arguments) == 1 and arguments[0].type.kind() == "DictType":
        return Signature((arguments[0].name,), dict_input=True)
    if any(a.type.kind() == "DictType" for a in arguments[1:]):
        raise TritonError.internal(
            "Multiple inputs of kind DictType were detected. Only a single input of type "
            "Dict(str, Tensor) is supported."
        )
    for argument in arguments:
        if argument.type.kind() not in ("TensorType", "ListType"):
            raise TritonError.internal(
                f"An input of type '{argument.type}' was detected in the model. Only a single "
                "input of type Dict(str, Tensor) or input(s) of type Tensor are supported."
            )
    if len(arguments) != expected_inputs:
        raise TritonError.invalid_arg(
            f"unable to load model '{model}', configuration expects {expected_inputs} inputs, "
            f"model provides {len(arguments)}"
        )
    return Signature(tuple(a.name for a in arguments), dict_input=False)


def input_indices(
    config: mc.ModelConfig, signature: Signature, sequence: SequenceTensors
) -> dict[str, int]:
    """Configured input name (and each sequence control and state input) -> position among
    forward()'s arguments (or in the dict)."""
    names = [i.name for i in config.input]
    if not names:
        raise TritonError.internal(
            "model configuration must contain at least one input, none were specified."
        )
    controls = {c.name: _control_index(c.name) for c in sequence.controls}
    states = [s.input_name for s in sequence.states]
    targets = [t for b in config.batch_input for t in b.target_name]
    if signature.dict_input:
        return {
            name: index for index, name in enumerate([*names, *targets, *controls, *states])
        }
    convention = _convention(names, signature.arguments, config.name, "input")
    indices = _indices(names, convention, signature.arguments)
    indices.update(_batch_input_indices(config.name, convention, signature, targets, len(names)))
    indices.update(controls)
    indices.update(_state_indices(config.name, convention, states))
    for name, index in indices.items():
        if index >= len(signature.arguments):
            raise TritonError.invalid_arg(
                f"unable to load model '{config.name}', input '{name}' refers to forward() "
                f"argument {index}, but forward() takes {len(signature.arguments)} arguments"
            )
    return indices


def output_indices(config: mc.ModelConfig, sequence: SequenceTensors) -> dict[str, int]:
    """Configured output name (and each state output) -> position in what forward() returns."""
    names = [o.name for o in config.output]
    if not names:
        raise TritonError.internal(
            "model configuration must contain at least one output, none were specified."
        )
    convention = _convention(names, (), config.name, "output")
    indices = _indices(names, convention, ())
    states = [s.output_name for s in sequence.states]
    indices.update(_state_indices(config.name, convention, states))
    return indices


def _batch_input_indices(
    model: str,
    convention: NamingConvention,
    signature: Signature,
    targets: list[str],
    input_count: int,
) -> dict[str, int]:
    """Where each batch input goes: by the configured inputs' convention (AddInputToMap)."""
    indices: dict[str, int] = {}
    for position, name in enumerate(targets):
        index: int | None = input_count + position
        if convention is NamingConvention.FORWARD_ARGUMENT:
            index = signature.arguments.index(name) if name in signature.arguments else None
        elif convention is NamingConvention.NAMED_INDEX:
            index = _named_index(name)
        if index is None:
            raise TritonError.invalid_arg(
                f"unable to load model '{model}', batch input '{name}' does not follow the "
                f"naming convention of the model's inputs ({convention.value})"
            )
        indices[name] = index
    return indices


def _named_index(name: str) -> int | None:
    """The index of a `<name>__<index>` name, None for another name."""
    _, delimiter, index = name.partition(DELIMITER)
    return int(index) if delimiter and index.isdigit() else None


def _control_index(name: str) -> int:
    index = _named_index(name)
    if index is None:
        raise TritonError.internal(
            f"input '{name}' does not follow <name>__<index> naming convention."
        )
    return index


def _state_indices(
    model: str, convention: NamingConvention, names: list[str]
) -> dict[str, int]:
    if not names:
        return {}
    if convention is not NamingConvention.NAMED_INDEX:
        raise TritonError.invalid_arg(
            f"PyTorch model '{model}' is using sequence batching with state but not all "
            "inputs and outputs follow the <name>__<index> naming convention. "
        )
    indices: dict[str, int] = {}
    for name in names:
        index = _named_index(name)
        if index is None:
            raise TritonError.invalid_arg(
                f"PyTorch model '{model}' is using sequence batching with state but state "
                f"'{name}' does not follow the <name>__<index> naming convention. "
            )
        indices[name] = index
    return indices


def _convention(
    names: list[str], arguments: tuple[str, ...], model: str, kind: str
) -> NamingConvention:
    if kind == "input" and all(n in arguments for n in names):
        return NamingConvention.FORWARD_ARGUMENT
    for name in names:
        if DELIMITER not in name:
            return NamingConvention.STRICT_CONFIG_ORDERING
        if not name.partition(DELIMITER)[2].isdigit():
            log.warning(
                "%s '%s' or previous %s(s) of the model '%s' do not follow the "
                "<name>__<index> naming convention. Falling back to enforcing strict "
                "ordering from model configuration.",
                kind, name, kind, model,
            )
            return NamingConvention.STRICT_CONFIG_ORDERING
    return NamingConvention.NAMED_INDEX


def _indices(
    names: list[str], convention: NamingConvention, arguments: tuple[str, ...]
) -> dict[str, int]:
    if convention is NamingConvention.FORWARD_ARGUMENT:
        return {name: arguments.index(name) for name in names}
    if convention is NamingConvention.NAMED_INDEX:
        return {name: int(name.partition(DELIMITER)[2]) for name in names}
    return {name: index for index, name in enumerate(names)}
