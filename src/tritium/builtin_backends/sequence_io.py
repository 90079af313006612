"""The tensors a stateful model takes beyond its configured inputs and outputs, as framework
backends see them: the sequence batcher's control inputs and implicit state.

`sequence_batching { control_input [...] state [...] }` names tensors that are not in the
configuration's `input`/`output` lists, yet the model has them: the scheduler adds the controls
and each state's `input_name` to every request it hands over, and expects each state's
`output_name` back. Triton's framework backends count them among the model's inputs when an
instance loads (ValidateBooleanSequenceControl, ValidateTypedSequenceControl, the states in
ValidateInputs/ValidateOutputs) and compute the state outputs on every execution; this module
reads them once from the configuration so both backends do the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from tritonclient.grpc import model_config_pb2 as mc

_Control = mc.ModelSequenceBatching.Control
_TYPED_KINDS = (_Control.CONTROL_SEQUENCE_CORRID,)


@dataclass(frozen=True)
class ControlTensor:
    """One control input: its name and the configuration type the scheduler sends it as."""

    name: str
    data_type: int
    kind: int


@dataclass(frozen=True)
class StateTensor:
    """One implicit state: fed to the model as `input_name`, read back from `output_name`."""

    input_name: str
    output_name: str
    data_type: int
    dims: tuple[int, ...]


@dataclass(frozen=True)
class SequenceTensors:
    controls: tuple[ControlTensor, ...]
    states: tuple[StateTensor, ...]

    @classmethod
    def of(cls, config: mc.ModelConfig) -> SequenceTensors:
        if not config.HasField("sequence_batching"):
            return cls((), ())
        batching = config.sequence_batching
        controls = tuple(
            ControlTensor(entry.name, _control_type(control), control.kind)
            for entry in batching.control_input
            for control in entry.control
        )
        states = tuple(
            StateTensor(s.input_name, s.output_name, s.data_type, tuple(s.dims))
            for s in batching.state
        )
        return cls(controls, states)

    @property
    def input_names(self) -> frozenset[str]:
        """Model inputs the scheduler fills: never part of a client's request."""
        return frozenset(
            [c.name for c in self.controls] + [s.input_name for s in self.states]
        )

    @property
    def output_names(self) -> frozenset[str]:
        """Model outputs the scheduler keeps as state: computed on every execution."""
        return frozenset(s.output_name for s in self.states)

    @property
    def string_inputs(self) -> frozenset[str]:
        """The controls and state inputs of TYPE_STRING (a CORRID carrying string ids)."""
        return frozenset(
            [c.name for c in self.controls if c.data_type == mc.TYPE_STRING]
            + [s.input_name for s in self.states if s.data_type == mc.TYPE_STRING]
        )

    def __len__(self) -> int:
        """How many model inputs these tensors add to the configured ones."""
        return len(self.controls) + len(self.states)


def _control_type(control: mc.ModelSequenceBatching.Control) -> int:
    """The type the scheduler sends a control as (sequence_control.py builds the tensors)."""
    if control.kind in _TYPED_KINDS:
        return control.data_type
    if control.int32_false_true:
        return mc.TYPE_INT32
    if control.fp32_false_true:
        return mc.TYPE_FP32
    return mc.TYPE_BOOL
