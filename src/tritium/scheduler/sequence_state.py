"""Implicit state: tensors the server keeps for each sequence between its requests.

`sequence_batching { state { input_name output_name data_type dims initial_state } }`: each
request of a sequence gets input `input_name` holding the state, and the state the model returns
as `output_name` replaces it for the next request. A sequence starts from `initial_state`
(`zero_data`, or `data_file` read from `<model>/initial_state/`), or zeros without one.

Triton's backends hand the new state over with TRITONBACKEND_StateUpdate. A Tritium backend
(and a Python model, whose pb_utils has no state call) returns it as an output named
`output_name`; the scheduler takes it from the response and drops it there unless the client
asked for that output by name.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tritonclient.grpc import model_config_pb2 as mc

from ..errors import TritonError
from ..request import InferenceRequest, InferenceResponse, RequestedOutput, ResponseSender
from ..tensor import Tensor, bytes_from_wire, element_count, numpy_dtype, wire_datatype

# Triton's kInitialStateFolder.
INITIAL_STATE_FOLDER = "initial_state"

SequenceValues = dict[str, np.ndarray]  # state input name -> the sequence's current value


class _StateSpec:
    __slots__ = ("input_name", "output_name", "datatype", "initial", "in_place")

    def __init__(self, state: mc.ModelSequenceBatching.State, batching: bool, model_dir: Path):
        self.input_name = state.input_name
        self.output_name = state.output_name
        # use_same_buffer_for_input_output: a compiled backend may write the new state into
        # the state input's own memory, so each sequence holds a private, writable array.
        self.in_place = state.use_same_buffer_for_input_output
        self.datatype = wire_datatype(state.data_type)
        if len(state.initial_state) > 1:
            raise TritonError.invalid_arg(
                f"initial_state field for state input '{state.input_name}' must contain "
                f"exactly one or zero element. Found '{len(state.initial_state)}' elements."
            )
        if state.initial_state:
            data = _initial_data(state.initial_state[0], state, model_dir)
        else:
            # No initial state: zeros, a variable dimension taken as 1.
            shape = [d if d >= 0 else 1 for d in state.dims]
            data = np.zeros(shape, dtype=numpy_dtype(self.datatype))
            if self.datatype == "BYTES":
                data[...] = b""
        self.initial = data[np.newaxis] if batching else data


def _initial_data(
    initial: mc.ModelSequenceBatching.InitialState,
    state: mc.ModelSequenceBatching.State,
    model_dir: Path,
) -> np.ndarray:
    """GenerateInitialStateData: the checks and messages are Triton's."""
    name = state.input_name
    if initial.data_type != state.data_type:
        raise TritonError.invalid_arg(
            f"The data type used for 'initial_state' field of state '{name}' does not match "
            "the state data type."
        )
    if not initial.name:
        raise TritonError.invalid_arg(
            f"Field 'name' must be set when using initial_state for state input '{name}'."
        )
    if len(initial.dims) != len(state.dims):
        raise TritonError.invalid_arg(
            "Number of dimensions in 'initial_state' doesn't match the size of 'state' "
            f"dimensions for state input '{name}'. {len(initial.dims)} != {len(state.dims)}"
        )
    for given, declared in zip(initial.dims, state.dims, strict=True):
        if given == -1:
            raise TritonError.invalid_arg(
                f"'initial_state' field for state input name '{name}' contains variable "
                "dimensions."
            )
        if declared != -1 and given != declared:
            raise TritonError.invalid_arg(
                f"'initial_state' dim for input name '{name}' doesn't match 'state' dim "
                f"description. {given} != {declared}"
            )
    shape = tuple(initial.dims)
    datatype = wire_datatype(initial.data_type)
    which = initial.WhichOneof("state_data")
    if which == "zero_data":
        data = np.zeros(shape, dtype=numpy_dtype(datatype))
        if datatype == "BYTES":
            data[...] = b""
        return data
    if which == "data_file":
        path = model_dir / INITIAL_STATE_FOLDER / initial.data_file
        try:
            content = path.read_bytes()
        except OSError as exc:
            raise TritonError.internal(
                f"failed to open text file for read {path}: {exc.strerror}"
            ) from None
        if datatype == "BYTES":
            flat = bytes_from_wire(content, element_count(shape), name, state.input_name, "")
            return flat.reshape(shape)
        dtype = numpy_dtype(datatype)
        needed = element_count(shape) * dtype.itemsize
        if needed > len(content):
            raise TritonError.invalid_arg(
                f"initial_state setting expects {needed} bytes, but the data provided from "
                f"{initial.data_file}only has {len(content)} bytes."
            )
        return np.frombuffer(content[:needed], dtype=dtype).reshape(shape).copy()
    raise TritonError.invalid_arg(
        f"initial_state setting expects state'{name}' to have state_data set"
    )


class ImplicitState:
    """The `state` entries of a model's sequence batcher, and how a request carries them."""

    def __init__(self, config: mc.ModelConfig, model_dir: Path) -> None:
        batching = config.max_batch_size > 0
        self._specs = [_StateSpec(s, batching, model_dir) for s in config.sequence_batching.state]
        names: set[str] = set()
        for spec in self._specs:
            if spec.input_name in names:
                raise TritonError.invalid_arg(
                    f"State input name '{spec.input_name}' specified more than once."
                )
            names.add(spec.input_name)
        self._all_outputs = [o.name for o in config.output]

    def __bool__(self) -> bool:
        return bool(self._specs)

    def initial(self) -> SequenceValues:
        """The values a new sequence starts from (shared arrays: states are replaced, never
        written in place, but for a state the backend may update in place)."""
        return {spec.input_name: spec.initial.copy() if spec.in_place else spec.initial
                for spec in self._specs}

    def attach(self, request: InferenceRequest, values: SequenceValues) -> None:
        """Give `request` the sequence's state inputs, ask the model for its state outputs, and
        have the response write the new state back into `values`."""
        client_wants = {o.name for o in request.requested_outputs}
        if not request.requested_outputs:
            request.requested_outputs = [RequestedOutput(n) for n in self._all_outputs]
        for spec in self._specs:
            value = values[spec.input_name]
            request.inputs[spec.input_name] = Tensor(
                spec.input_name, spec.datatype, tuple(value.shape), value
            )
            if spec.output_name not in client_wants:
                request.requested_outputs.append(RequestedOutput(spec.output_name))
        outputs = {spec.output_name: spec for spec in self._specs}
        original = request.response_sender
        assert original is not None

        def deliver(response: InferenceResponse | None, flags: int) -> None:
            if response is not None and response.error is None:
                kept = []
                for tensor in response.outputs:
                    spec = outputs.get(tensor.name)
                    if spec is not None:
                        values[spec.input_name] = (np.array(tensor.data) if spec.in_place
                                                   else np.asarray(tensor.data))
                        if tensor.name not in client_wants:
                            continue
                    kept.append(tensor)
                response.outputs = kept
            original.send(response, flags)

        request.response_sender = ResponseSender(deliver)

    def null_values(self, like: SequenceValues) -> SequenceValues:
        """State for a null (filler) request: a copy, so the filler cannot change a real
        sequence's state."""
        return {name: value.copy() for name, value in like.items()}
