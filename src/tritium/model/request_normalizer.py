"""Check a request against its model's configuration before it is queued.

Triton's InferenceRequest::Normalize: required inputs present, no unknown inputs or outputs,
datatypes and shapes as configured, one batch size within max_batch_size, reshape applied. The
messages follow Triton's wording, prefixed with the request id as Triton does.
"""

from __future__ import annotations

from typing import Sequence

from tritonclient.grpc import model_config_pb2 as mc

from ..errors import TritonError
from ..request import InferenceRequest, log_prefix
from ..tensor import dims_string, wire_datatype


def normalize_request(request: InferenceRequest, config: mc.ModelConfig) -> None:
    prefix = log_prefix(request.id)
    model = config.name
    inputs = {i.name: i for i in config.input}

    for name in request.inputs:
        if name not in inputs:
            raise TritonError.invalid_arg(
                f"unexpected inference input '{name}' for model '{model}'"
            )
    required = [n for n, i in inputs.items() if not i.optional]
    missing = [n for n in required if n not in request.inputs]
    if missing:
        raise TritonError.invalid_arg(
            f"{prefix}expected {len(required)} inputs but got {len(request.inputs)} inputs for "
            f"model '{model}'. Got input(s) {_names(request.inputs)}, but missing required "
            f"input(s) {_names(missing)}. Please provide all required input(s)."
        )
    outputs = {o.name for o in config.output}
    for name in request.requested_output_names:
        if name not in outputs:
            raise TritonError.invalid_arg(
                f"unexpected inference output '{name}' for model '{model}'"
            )

    batching = config.max_batch_size > 0
    batch_size = 0
    for name, tensor in request.inputs.items():
        spec = inputs[name]
        expected_type = wire_datatype(spec.data_type)
        if tensor.datatype != expected_type:
            raise TritonError.invalid_arg(
                f"{prefix}inference input '{name}' data-type is '{tensor.datatype}', but model "
                f"'{model}' expects '{expected_type}'"
            )
        shape = tensor.shape
        if batching:
            if not shape:
                raise TritonError.invalid_arg(
                    f"{prefix}input '{name}' has no shape but model requires batch dimension "
                    f"for '{model}'"
                )
            if batch_size == 0:
                batch_size = shape[0]
            elif shape[0] != batch_size:
                raise TritonError.invalid_arg(
                    f"{prefix}input '{name}' batch size does not match other inputs for '{model}'"
                )
            shape = shape[1:]
        if not _matches(shape, spec.dims):
            expected = [-1, *spec.dims] if batching else list(spec.dims)
            raise TritonError.invalid_arg(
                f"{prefix}unexpected shape for input '{name}' for model '{model}'. "
                f"Expected {dims_string(expected)}, got {dims_string(tensor.shape)}."
                + (_BATCH_NOTE if batching else "")
            )
        if spec.HasField("reshape"):
            new_shape = ((batch_size,) if batching else ()) + tuple(spec.reshape.shape)
            tensor.data = tensor.data.reshape(new_shape)
            tensor.shape = tuple(tensor.data.shape)

    if batching:
        if batch_size < 1 or batch_size > config.max_batch_size:
            raise TritonError.invalid_arg(
                f"{prefix}inference request batch-size must be <= {config.max_batch_size} "
                f"for '{model}'"
            )
    request.batch_size = batch_size if batching else 1


_BATCH_NOTE = (
    " NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to"
    " be prepended to each input shape. If you want to specify the full shape including the"
    " batch dim in your input dims config, try setting max_batch_size to zero. See the model"
    " configuration docs for more info on max_batch_size."
)


def _matches(shape: Sequence[int], dims: Sequence[int]) -> bool:
    if len(shape) != len(dims):
        return False
    return all(d == -1 or d == s for s, d in zip(shape, dims))


def _names(names: object) -> str:
    return "[" + ", ".join(f"'{n}'" for n in names) + "]"  # type: ignore[union-attr]
