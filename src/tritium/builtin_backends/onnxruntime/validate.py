"""The configuration checked against the ONNX model when an instance loads, with the messages of
Triton's ORT backend (ValidateInputs, ValidateOutputs, CompareDimsSupported, and for stateful
models ValidateBooleanSequenceControl / ValidateTypedSequenceControl and the state checks): a
configuration that contradicts the model is refused, naming the tensor."""

from __future__ import annotations

from typing import TypeAlias

from tritonclient.grpc import model_config_pb2 as mc

from tritium.backend import TritonError
from tritium.tensor import dims_string, wire_datatype

from ..sequence_io import SequenceTensors
from .session import SessionInfo, TensorInfo

_ModelIO: TypeAlias = mc.ModelInput | mc.ModelOutput


def validate_io(config: mc.ModelConfig, info: SessionInfo) -> None:
    sequence = SequenceTensors.of(config)
    _validate_controls(config, info, sequence)
    _validate_inputs(config, info, len(sequence))
    _validate_outputs(config, info)
    _validate_states(config, info, sequence)


def _validate_controls(
    config: mc.ModelConfig, info: SessionInfo, sequence: SequenceTensors
) -> None:
    """Each control input is a model input of shape [1] (after the batch dimension) and of the
    type the scheduler sends."""
    name = config.name
    for control in sequence.controls:
        tensor = info.inputs.get(control.name)
        if tensor is None:
            raise TritonError.internal(
                f"configuration specified sequence control '{control.name}', but model does "
                "not provide that input"
            )
        dims = tensor.dims[1:] if config.max_batch_size > 0 else tensor.dims
        if dims != (1,):
            raise TritonError.invalid_arg(
                f"unable to load model '{name}', sequence control '{control.name}' in model "
                f"has dims {dims_string(dims)} but dims [1] is expected"
            )
        if tensor.config_type != control.data_type:
            raise TritonError.invalid_arg(
                f"unable to load model '{name}', sequence control '{control.name}', the model "
                f"expects data-type {_onnx_type_name(tensor)} but the model configuration "
                f"specifies data-type {mc.DataType.Name(control.data_type)}"
            )


def _validate_states(
    config: mc.ModelConfig, info: SessionInfo, sequence: SequenceTensors
) -> None:
    """Each state is a model input and a model output of the state's type."""
    for state in sequence.states:
        for tensor_name, tensors, kind in (
            (state.input_name, info.inputs, "input"),
            (state.output_name, info.outputs, "output"),
        ):
            tensor = _find(tensor_name, tensors, kind)
            if tensor.config_type != state.data_type:
                raise TritonError.invalid_arg(
                    f"unable to load model '{config.name}', configuration expects datatype "
                    f"{mc.DataType.Name(state.data_type)} for {kind} state '{tensor_name}', "
                    f"model provides TYPE_{wire_datatype(tensor.config_type)}"
                )


def _onnx_type_name(tensor: TensorInfo) -> str:
    """OnnxDataTypeName: the ONNX element type in capitals (FLOAT, INT32, ...)."""
    return tensor.onnx_type.removeprefix("tensor(").removesuffix(")").upper()


def _validate_inputs(config: mc.ModelConfig, info: SessionInfo, sequence_inputs: int) -> None:
    name = config.name
    expected = sum(1 for i in config.input if not i.optional) + len(config.batch_input)
    expected += sequence_inputs
    if len(info.inputs) != expected:
        raise TritonError.invalid_arg(
            f"unable to load model '{name}', configuration expects {expected} inputs, "
            f"model provides {len(info.inputs)}"
        )
    allowed = {**info.inputs, **info.overridable}
    for io in config.input:
        if io.optional and config.max_batch_size != 0:
            raise TritonError.invalid_arg(
                f"unable to load model '{name}', optional input '{io.name}' is not supported "
                "for models that support batching"
            )
        tensor = _find(io.name, allowed, "input")
        _check_datatype(name, io, tensor, "input")
        if io.allow_ragged_batch:
            _check_ragged(name, io, tensor)
        elif tensor.dims:
            _compare_dims(name, io.name, tensor.dims, _dims(io), config.max_batch_size)
        else:
            _check_scalar(name, io)


def _validate_outputs(config: mc.ModelConfig, info: SessionInfo) -> None:
    # A batch output's shape follows an input's, not the model's (batch_output.py).
    batch_outputs = {t for b in config.batch_output for t in b.target_name}
    for io in config.output:
        tensor = _find(io.name, info.outputs, "output")
        _check_datatype(config.name, io, tensor, "output")
        if io.name in batch_outputs:
            continue
        if tensor.dims:
            _compare_dims(config.name, io.name, tensor.dims, _dims(io), config.max_batch_size)
        else:
            _check_scalar(config.name, io)


def _check_ragged(model: str, io: mc.ModelInput, tensor: TensorInfo) -> None:
    """A ragged input reaches the model as one flat tensor of the whole batch: the model must
    take shape [-1], whatever the configured dims."""
    prefix = (
        f"unable to load model '{model}', configuration expects model provides input with "
        "shape [-1]"
    )
    if io.optional:
        raise TritonError.invalid_arg(
            f"{prefix} for ragged input '{io.name}', which is not supported for optional input"
        )
    if tensor.dims != (-1,):
        raise TritonError.invalid_arg(
            f"{prefix}  for ragged input '{io.name}', model provides {dims_string(tensor.dims)}"
        )


def _find(name: str, allowed: dict[str, TensorInfo], kind: str) -> TensorInfo:
    """CheckAllowedModelInput / CheckAllowedModelOutput."""
    tensor = allowed.get(name)
    if tensor is None:
        names = ", ".join(sorted(allowed))
        raise TritonError.invalid_arg(
            f"unexpected inference {kind} '{name}', allowed {kind}s are: {names}"
        )
    return tensor


def _check_datatype(model: str, io: _ModelIO, tensor: TensorInfo, kind: str) -> None:
    configured = mc.DataType.Name(io.data_type)
    if tensor.config_type != io.data_type:
        raise TritonError.invalid_arg(
            f"unable to load model '{model}', configuration expects datatype {configured} "
            f"for {kind} '{io.name}', model provides TYPE_{wire_datatype(tensor.config_type)}"
        )


def _dims(io: _ModelIO) -> tuple[int, ...]:
    return tuple(io.reshape.shape) if io.HasField("reshape") else tuple(io.dims)


def _check_scalar(model: str, io: _ModelIO) -> None:
    dims = _dims(io)
    if any(d != 1 for d in dims):
        raise TritonError.invalid_arg(
            f"unable to load model '{model}', scalar tensor '{io.name}', should only provide 1 "
            "in the model configuration when the model doesn't support batching. Model "
            f"configuration provided: {dims_string(dims)}."
        )


def _compare_dims(
    model: str,
    tensor: str,
    model_shape: tuple[int, ...],
    dims: tuple[int, ...],
    max_batch_size: int,
) -> None:
    """CompareDimsSupported: a -1 in the model matches any configured size."""
    prefix = f"model '{model}', tensor '{tensor}': "
    if max_batch_size > 0:
        if not model_shape or model_shape[0] != -1:
            raise TritonError.invalid_arg(
                f"{prefix}for the model to support batching the shape should have at least 1 "
                "dimension and the first dimension must be -1; but shape expected by the "
                f"model is {dims_string(model_shape)}"
            )
        full = (-1, *dims)
        if not _matches(model_shape, full):
            raise TritonError.invalid_arg(
                f"{prefix}the model expects {len(model_shape)} dimensions (shape "
                f"{dims_string(model_shape)}) but the model configuration specifies {len(full)} "
                "dimensions (an initial batch dimension because max_batch_size > 0 followed "
                f"by the explicit tensor shape, making complete shape {dims_string(full)})"
            )
    elif not _matches(model_shape, dims):
        raise TritonError.invalid_arg(
            f"{prefix}the model expects {len(model_shape)} dimensions (shape "
            f"{dims_string(model_shape)}) but the model configuration specifies {len(dims)} "
            f"dimensions (shape {dims_string(dims)})"
        )


def _matches(model_shape: tuple[int, ...], dims: tuple[int, ...]) -> bool:
    return len(model_shape) == len(dims) and all(
        m == -1 or m == d for m, d in zip(model_shape, dims, strict=True)
    )

