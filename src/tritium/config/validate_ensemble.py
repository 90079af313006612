"""Validation of an ensemble's data flow, with Triton's own messages.

Two checks, at the two moments Triton makes them:
- `validate_ensemble_graph` (core `model_config_utils.cc` BuildEnsembleGraph and
  ValidateEnsembleSchedulingConfig) needs only the ensemble's configuration and runs when the
  repository is polled: every step names a model and maps inputs and outputs, every tensor is
  written by one step only, every ensemble input is used, every output is written from the
  inputs (which also rules out cycles) and no tensor is left unused.
- `validate_ensemble_steps` (core `ensemble_utils.cc` ValidateEnsembleConfig) needs the
  composing models' final configurations and runs when the ensemble loads: batch sizes, the
  step maps against the models' inputs and outputs, one datatype and shape per tensor, and
  whether any step is decoupled (then the ensemble is too).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tritonclient.grpc import model_config_pb2 as mc

from ..errors import TritonError
from ..tensor import dims_string


def _invalid(message: str) -> TritonError:
    return TritonError.invalid_arg(message)


@dataclass(eq=False)
class _GraphTensor:
    written: bool  # some step lists it in its output_map
    name: str = ""
    ready: bool = False
    prev: list[_GraphTensor] = field(default_factory=list)
    next: list[_GraphTensor] = field(default_factory=list)


def validate_ensemble_graph(config: mc.ModelConfig) -> None:
    """ValidateEnsembleSchedulingConfig's data-flow part (the step-shape checks included)."""
    name = config.name
    tensors: dict[str, _GraphTensor] = {}
    for index, step in enumerate(config.ensemble_scheduling.step):
        for what in ("model_name", "input_map", "output_map"):
            if not getattr(step, what):
                raise _invalid(f"must specify '{what}' in step {index} of ensemble '{name}'")
        produced = []
        for tensor_name in step.output_map.values():
            node = tensors.get(tensor_name)
            if node is None:
                node = tensors[tensor_name] = _GraphTensor(written=True, name=tensor_name)
            elif node.written:
                raise _invalid(
                    f"ensemble tensor '{tensor_name}' can appear in an output map only once "
                    f"for ensemble '{name}' step {index}"
                )
            else:
                node.written = True
            produced.append(node)
        # A protobuf map cannot repeat a key, so "mapped to multiple ensemble tensors" (a
        # check on Triton's side) cannot happen here.
        for tensor_name in step.input_map.values():
            node = tensors.setdefault(tensor_name, _GraphTensor(written=False, name=tensor_name))
            for out in produced:
                out.prev.append(node)
                node.next.append(out)

    ready: deque[_GraphTensor] = deque()
    for tensor in config.input:
        node = tensors.get(tensor.name)
        if node is None:
            # Triton's message lacks the opening quote before the ensemble name; kept verbatim.
            raise _invalid(f"ensemble input '{tensor.name}' for ensemble {name}' is not used")
        node.ready = True
        ready.append(node)
    while ready:
        node = ready.popleft()
        for following in node.next:
            if not following.ready and all(p.ready for p in following.prev):
                following.ready = True
                ready.append(following)
    outputs = set()
    for tensor in config.output:
        node = tensors.get(tensor.name)
        if node is None:
            raise _invalid(f"ensemble output '{tensor.name}' for ensemble {name}' is not used")
        if not node.ready:
            message = f"output '{tensor.name}' for ensemble '{name}' is not written"
            # Triton names the first not-ready tensor it finds walking back from the output.
            last, prevs, seen = node, node.prev, set()
            while prevs:
                found = next((p for p in prevs if not p.ready and p.name not in seen), None)
                if found is None:
                    break
                seen.add(found.name)
                last, prevs = found, found.prev
            if last is not node:
                message += (f": at least one of its depending tensors, '{last.name}', is not "
                            "connected")
            raise _invalid(message)
        outputs.add(tensor.name)
    for tensor_name, node in tensors.items():
        if tensor_name not in outputs and (not node.ready or not node.next):
            raise _invalid(f"ensemble tensor '{tensor_name}' is unused in ensemble '{name}'")


@dataclass(eq=False)
class _TypedTensor:
    """An ensemble tensor as one model sees it (Triton's TensorNode)."""

    model: str
    datatype: int = 0
    dims: tuple[int, ...] = ()
    full_dims: tuple[int, ...] = ()
    decoupled: bool = False
    label: int = 0
    visited: bool = False
    prev: list[_TypedTensor] = field(default_factory=list)
    next: list[_TypedTensor] = field(default_factory=list)
    # The outputs of one step share a symbolic sibling that carries their decoupled label.
    sibling: _TypedTensor | None = None

    @classmethod
    def of(cls, model: str, batching: bool, datatype: int, dims: Sequence[int]) -> _TypedTensor:
        dims = tuple(dims)
        return cls(model, datatype, dims, ((-1,) if batching else ()) + dims)


def dims_match(a: Sequence[int], b: Sequence[int]) -> bool:
    """CompareDimsWithWildcard: same rank, and each pair equal or either one -1."""
    return len(a) == len(b) and all(x == y or x == -1 or y == -1 for x, y in zip(a, b, strict=True))


def _check_consistent(known: _TypedTensor, new: _TypedTensor, prefix: str) -> None:
    if known.datatype != new.datatype:
        raise _invalid(
            f"{prefix}inconsistent data type: {mc.DataType.Name(known.datatype)} is inferred "
            f"from model {known.model} while {mc.DataType.Name(new.datatype)} is inferred from "
            f"model {new.model}"
        )
    if not dims_match(known.dims, new.dims) and not dims_match(known.full_dims, new.full_dims):
        raise _invalid(
            f"{prefix}inconsistent shape: {dims_string(known.full_dims)} is inferred from model "
            f"{known.model} while {dims_string(new.full_dims)} is inferred from model {new.model}"
        )


def _io_dims(io: mc.ModelInput | mc.ModelOutput) -> Sequence[int]:
    return io.reshape.shape if io.HasField("reshape") else io.dims


def validate_ensemble_steps(
    config: mc.ModelConfig, composing: Mapping[str, mc.ModelConfig]
) -> bool:
    """ValidateEnsembleConfig against each step model's configuration (`composing`, by name).

    Returns whether the ensemble is decoupled: some ensemble output depends on a decoupled step.
    """
    name = config.name
    batching = config.max_batch_size > 0
    tensors: dict[str, _TypedTensor] = {}
    for tensor in config.input:
        tensors[tensor.name] = _TypedTensor.of(name, batching, tensor.data_type, _io_dims(tensor))
    # The ensemble itself consumes its outputs (Triton's sink node): they may not come from
    # different decoupled steps either.
    sink = _TypedTensor(name)
    for tensor in config.output:
        node = tensors[tensor.name] = _TypedTensor.of(name, batching, tensor.data_type,
                                                      _io_dims(tensor))
        sink.prev.append(node)
        node.next.append(sink)

    for step in config.ensemble_scheduling.step:
        model = composing[step.model_name]
        if model.max_batch_size != 0 and model.max_batch_size < config.max_batch_size:
            raise _invalid(
                f"ensemble {name} allows maximum batch size {config.max_batch_size}, but it "
                f"contains model {step.model_name} which only allows maximum batch size to be "
                f"{model.max_batch_size}"
            )
        _map_step(name, step, model, tensors)

    return _decoupled_labels(config, tensors)


def _map_step(
    name: str, step: mc.ModelEnsembling.Step, model: mc.ModelConfig,
    tensors: dict[str, _TypedTensor],
) -> None:
    """ValidateTensorMapping: one step's maps against its model, linking the graph."""
    step_model = step.model_name
    batching = model.max_batch_size > 0
    input_names = {i.name for i in model.input}
    for model_input, tensor_name in step.input_map.items():
        if model_input not in input_names:
            raise _invalid(
                f"in ensemble {name}, ensemble tensor {tensor_name} is mapping to non-existing "
                f"input {model_input} in model {step_model}"
            )
    for model_input in model.input:
        tensor_name = step.input_map.get(model_input.name)
        if tensor_name is None:
            if model_input.optional:
                continue
            raise _invalid(
                f"in ensemble {name}, input {model_input.name} in model {step_model} is not "
                "mapped to any ensemble tensors"
            )
        _merge(tensors, tensor_name, step_model, batching, model_input, name)

    output_names = {o.name for o in model.output}
    for model_output, tensor_name in step.output_map.items():
        if model_output not in output_names:
            raise _invalid(
                f"in ensemble {name}, ensemble tensor {tensor_name} is mapped from non-existing "
                f"output {model_output} in model {step_model}"
            )
    sibling = _TypedTensor(step_model)
    outputs = {o.name: o for o in model.output}
    for model_output, tensor_name in step.output_map.items():
        node = _merge(tensors, tensor_name, step_model, batching, outputs[model_output], name)
        node.sibling = sibling

    decoupled = model.model_transaction_policy.decoupled
    for tensor_name in step.output_map.values():
        node = tensors[tensor_name]
        node.decoupled = decoupled
        for input_tensor in step.input_map.values():
            prev = tensors[input_tensor]
            node.prev.append(prev)
            prev.next.append(node)


def _merge(
    tensors: dict[str, _TypedTensor], tensor_name: str, model: str, batching: bool,
    io: mc.ModelInput | mc.ModelOutput, ensemble: str,
) -> _TypedTensor:
    seen = _TypedTensor.of(model, batching, io.data_type, io.dims)
    known = tensors.get(tensor_name)
    if known is None:
        tensors[tensor_name] = seen
        return seen
    _check_consistent(known, seen, f"in ensemble {ensemble}, ensemble tensor {tensor_name}: ")
    return known


def _decoupled_labels(config: mc.ModelConfig, tensors: dict[str, _TypedTensor]) -> bool:
    """Walk the graph from the inputs: a step may not mix tensors from different decoupled
    steps (their responses could not be matched up); any decoupled step makes the ensemble
    decoupled."""
    label = 0
    queue: deque[_TypedTensor] = deque()
    for tensor in config.input:
        node = tensors[tensor.name]
        node.visited = True
        queue.append(node)
    while queue:
        node = queue.popleft()
        for following in node.next:
            if following.visited or not all(p.visited for p in following.prev):
                continue
            prev_label = following.prev[0].label
            if any(p.label != prev_label for p in following.prev):
                raise _invalid(
                    f"in ensemble {config.name}, step of model '{following.model}' receives "
                    "inputs originated from different decoupled models"
                )
            sibling = following.sibling
            if sibling is not None and sibling.visited:
                following.label = sibling.label
            else:
                if following.decoupled:
                    label += 1
                    following.label = label
                else:
                    following.label = prev_label
                if sibling is not None:
                    sibling.label = following.label
                    sibling.visited = True
            following.visited = True
            queue.append(following)
    return label != 0
