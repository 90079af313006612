"""What the ensemble scheduler reads from an ensemble's configuration, gathered once per model
(Triton's EnsembleInfo): the steps with their maps, which steps consume each tensor, which step
writes it, and the configured shape of each ensemble output."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tritonclient.grpc import model_config_pb2 as mc

from ..config.validate_ensemble import dims_match


@dataclass(frozen=True)
class StepInfo:
    model_name: str
    model_version: int  # -1: the newest ready version
    input_to_tensor: dict[str, str]  # composing model input -> ensemble tensor
    output_to_tensor: dict[str, str]  # composing model output -> ensemble tensor
    # The namespace of the step's model (set by the model repository manager only with
    # --model-namespacing, so that the step runs the model it was linked to).
    model_namespace: str = ""


@dataclass
class EnsemblePlan:
    name: str
    batching: bool
    decoupled: bool
    steps: list[StepInfo] = field(default_factory=list)
    # ensemble tensor -> indices of the steps that consume it
    consumers: dict[str, set[int]] = field(default_factory=dict)
    # ensemble tensor -> index of the step that writes it
    producer: dict[str, int] = field(default_factory=dict)
    output_dims: dict[str, tuple[int, ...]] = field(default_factory=dict)
    optional_inputs: frozenset[str] = frozenset()

    @classmethod
    def from_config(cls, config: mc.ModelConfig) -> EnsemblePlan:
        plan = cls(
            config.name,
            config.max_batch_size > 0,
            config.model_transaction_policy.decoupled,
            optional_inputs=frozenset(i.name for i in config.input if i.optional),
        )
        for tensor in config.input:
            plan.consumers.setdefault(tensor.name, set())
        for tensor in config.output:
            plan.consumers.setdefault(tensor.name, set())
            dims = tensor.reshape.shape if tensor.HasField("reshape") else tensor.dims
            plan.output_dims[tensor.name] = tuple(dims)
        for step in config.ensemble_scheduling.step:
            index = len(plan.steps)
            plan.steps.append(StepInfo(
                step.model_name, step.model_version, dict(step.input_map), dict(step.output_map),
                step.model_namespace,
            ))
            for tensor_name in step.input_map.values():
                plan.consumers.setdefault(tensor_name, set()).add(index)
            for tensor_name in step.output_map.values():
                plan.consumers.setdefault(tensor_name, set())
                plan.producer[tensor_name] = index
        return plan

    def pruned(self, requested: Iterable[str]) -> dict[str, set[int]]:
        """`consumers` without the steps no requested output depends on (Triton prunes the
        graph backward from the outputs the request leaves out)."""
        ignored = set(self.output_dims) - set(requested)
        if not ignored:
            return self.consumers
        consumers = {name: set(steps) for name, steps in self.consumers.items()}
        outputs_left: dict[int, int] = {}
        while ignored:
            newly_ignored = set()
            for tensor_name in ignored:
                index = self.producer.get(tensor_name)
                if index is None:
                    continue
                step = self.steps[index]
                left = outputs_left.setdefault(index, len(step.output_to_tensor)) - 1
                outputs_left[index] = left
                if left == 0:  # none of the step's outputs is wanted: skip the step
                    for tensor in step.input_to_tensor.values():
                        consumers[tensor].discard(index)
                        if not consumers[tensor]:
                            newly_ignored.add(tensor)
            ignored = newly_ignored
        return consumers


def reshape_dims(
    config_dims: Sequence[int], config_batching: bool, tensor_batch_size: int,
    shape: tuple[int, ...],
) -> tuple[int, ...]:
    """ReshapeTensorDims: a tensor passed between a batching and a non-batching model gains
    or loses its batch dimension of 1 when the receiving side's dims say so."""
    if config_batching == (tensor_batch_size != 0):
        return shape
    if config_batching:
        if dims_match(config_dims, shape):
            return (1, *shape)
        return shape
    if not dims_match(config_dims, shape) and tensor_batch_size == 1:
        return shape[1:]
    return shape
