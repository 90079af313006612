"""Validation of a model's inputs, outputs, batch inputs and batch outputs.

A port of Triton's `ValidateModelIOConfig` (core `src/model_config_utils.cc`, Triton 2.51):
every message ends with " for <model>", as Triton appends it. Triton does not reject two inputs
(or outputs) with the same name, so neither do we (checked against Triton 2.51: such a model
loads and its config lists both).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeAlias

from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper
from tritonclient.grpc import model_config_pb2 as mc

from ..errors import TritonError
from .validate import TENSORRT_PLATFORM

WILDCARD_DIM = -1

_ModelIO: TypeAlias = mc.ModelInput | mc.ModelOutput

_ONE_SOURCE_BATCH_INPUTS = frozenset(
    {
        mc.BatchInput.BATCH_ELEMENT_COUNT,
        mc.BatchInput.BATCH_ACCUMULATED_ELEMENT_COUNT,
        mc.BatchInput.BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO,
        mc.BatchInput.BATCH_MAX_ELEMENT_COUNT_AS_SHAPE,
        mc.BatchInput.BATCH_ITEM_SHAPE,
        mc.BatchInput.BATCH_ITEM_SHAPE_FLATTEN,
    }
)


def validate_model_io_config(config: mc.ModelConfig) -> None:
    """Check every input, output, batch input and batch output; the first problem is raised."""
    try:
        for model_input in config.input:
            _validate_input(model_input, config.max_batch_size, config.platform)
        for model_output in config.output:
            _validate_output(model_output, config.max_batch_size, config.platform)
        _validate_batch_io(config)
    except TritonError as exc:
        raise TritonError(exc.code, f"{exc.message} for {config.name}") from None


def _validate_input(io: mc.ModelInput, max_batch_size: int, platform: str) -> None:
    _validate_shape(io, max_batch_size, "model input ")
    if io.format in (mc.ModelInput.FORMAT_NHWC, mc.ModelInput.FORMAT_NCHW) and len(io.dims) != 3:
        raise TritonError.invalid_arg("model input NHWC/NCHW require 3 dims")
    _validate_tensorrt_only(io, platform, "input")


def _validate_output(io: mc.ModelOutput, max_batch_size: int, platform: str) -> None:
    _validate_shape(io, max_batch_size, "model output ")
    _validate_tensorrt_only(io, platform, "output")


def _validate_tensorrt_only(io: _ModelIO, platform: str, io_type: str) -> None:
    """Shape tensors and non-linear formats exist only for TensorRT plans."""
    if platform != TENSORRT_PLATFORM and io.is_shape_tensor:
        raise TritonError.invalid_arg("shape tensors are only supported for TensorRT platform")
    if io.is_non_linear_format_io:
        if platform != TENSORRT_PLATFORM:
            raise TritonError.invalid_arg(
                "Non-linear IO format is only supported for the TensorRT platform"
            )
        if len(io.dims) != 3:
            raise TritonError.invalid_arg(f"Non-linear IO format {io_type} requires 3 dims")


def _validate_shape(io: _ModelIO, max_batch_size: int, prefix: str) -> None:
    """ValidateIOShape: name, datatype, dims, and a reshape consistent with the dims."""
    if not io.name:
        raise TritonError.invalid_arg(f"{prefix}must specify 'name'")
    prefix = f"{prefix}'{io.name}' "
    if io.data_type == mc.TYPE_INVALID:
        raise TritonError.invalid_arg(f"{prefix}must specify 'data_type'")
    if not io.dims:
        raise TritonError.invalid_arg(f"{prefix}must specify 'dims'")
    has_reshape = io.HasField("reshape")
    if has_reshape and not io.reshape.shape and max_batch_size == 0:
        raise TritonError.invalid_arg(
            f"{prefix}cannot have empty reshape for non-batching model as scalar tensors are "
            "not supported"
        )
    if any(d < 1 and d != WILDCARD_DIM for d in io.dims):
        raise TritonError.invalid_arg(
            f"{prefix}dimension must be integer >= 1, or {WILDCARD_DIM} to indicate a "
            "variable-size dimension"
        )
    if not has_reshape:
        return
    if any(d < 1 and d != WILDCARD_DIM for d in io.reshape.shape):
        raise TritonError.invalid_arg(
            f"{prefix}reshape dimensions must be integer >= 1, or {WILDCARD_DIM} to indicate "
            "a variable-size dimension"
        )
    dims_size = _element_count(io.dims)
    reshape_size = _element_count(io.reshape.shape)
    # An empty reshape (a scalar) needs dims with one element.
    if dims_size != reshape_size and (reshape_size != 0 or dims_size != 1):
        raise TritonError.invalid_arg(f"{prefix}has different size for dims and reshape")
    if dims_size == WILDCARD_DIM:
        # With variable-size dims, each run between wildcards must hold the same element
        # count: [2, 4, -1, 6] may become [8, -1, 1, 6].
        dims_runs, reshape_runs = _runs(io.dims), _runs(io.reshape.shape)
        if len(dims_runs) != len(reshape_runs):
            raise TritonError.invalid_arg(
                f"{prefix}has different number of variable-size dimensions for dims and reshape"
            )
        if dims_runs != reshape_runs:
            raise TritonError.invalid_arg(f"{prefix}has different size for dims and reshape")


def _element_count(dims: Iterable[int]) -> int:
    """Triton's GetElementCount: -1 if any dim is a wildcard, 0 for no dims, else the product."""
    dims = list(dims)
    if WILDCARD_DIM in dims:
        return WILDCARD_DIM
    count = 0
    for index, dim in enumerate(dims):
        count = dim if index == 0 else count * dim
    return count


def _runs(dims: Iterable[int]) -> list[int]:
    """Element counts of the runs of fixed dims between wildcards."""
    runs, current = [], 1
    for dim in dims:
        if dim == WILDCARD_DIM:
            runs.append(current)
            current = 1
        else:
            current *= dim
    runs.append(current)
    return runs


def _validate_batch_io(config: mc.ModelConfig) -> None:
    """ValidateBatchIO: kinds, source inputs and target outputs must exist."""
    input_names = {io.name for io in config.input}
    output_names = {io.name for io in config.output}
    for batch_input in config.batch_input:
        kind = _enum_name(mc.BatchInput.Kind, batch_input.kind)
        if batch_input.kind not in _ONE_SOURCE_BATCH_INPUTS:
            raise TritonError.invalid_arg(f"unknown batch input kind '{kind}'")
        if len(batch_input.source_input) != 1:
            raise TritonError.invalid_arg(
                f"batch input kind '{kind}' expects 1 source input, "
                f"got {len(batch_input.source_input)}"
            )
        if batch_input.data_type not in (mc.TYPE_INT32, mc.TYPE_FP32):
            raise TritonError.invalid_arg("batch input data type must be TYPE_INT32 or TYPE_FP32")
        _check_sources(batch_input.source_input, input_names)
    for batch_output in config.batch_output:
        kind = _enum_name(mc.BatchOutput.Kind, batch_output.kind)
        if batch_output.kind != mc.BatchOutput.BATCH_SCATTER_WITH_INPUT_SHAPE:
            raise TritonError.invalid_arg(f"unknown batch output kind '{kind}'")
        if len(batch_output.source_input) != 1:
            raise TritonError.invalid_arg(
                f"batch output kind '{kind}' expects 1 source input, "
                f"got {len(batch_output.source_input)}"
            )
        _check_sources(batch_output.source_input, input_names)
        targets: set[str] = set()
        for target in batch_output.target_name:
            if target not in output_names:
                raise TritonError.invalid_arg(f"unknown target output name '{target}'")
            if target in targets:
                raise TritonError.invalid_arg(
                    f"target output name '{target}' can only be specified once"
                )
            targets.add(target)


def _check_sources(sources: Iterable[str], input_names: set[str]) -> None:
    for source in sources:
        if source not in input_names:
            raise TritonError.invalid_arg(f"unknown source input name '{source}'")


def _enum_name(enum_type: EnumTypeWrapper, value: int) -> str:
    """The enum's name, or the number for a value the schema does not know (proto3 allows it)."""
    try:
        return enum_type.Name(value)
    except ValueError:
        return str(value)
