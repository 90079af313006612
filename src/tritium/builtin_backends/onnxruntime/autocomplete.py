"""Configuration auto-complete from the ONNX graph, as Triton's ORT backend does it.

Nothing is filled when the configuration already lists inputs and outputs. Otherwise the
model is batchable when every input and output has a variable first dimension (-1 or symbolic);
`max_batch_size` left at 0 then becomes the backend's `default-max-batch-size` (4 unless
`--backend-config=onnxruntime,default-max-batch-size=N`), and a batchable model with a maximum
above 1 gets `dynamic_batching {}` unless it has a batcher already.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from tritonclient.grpc import model_config_pb2 as mc

from tritium.backend import TritonError

from ..sequence_io import SequenceTensors
from .session import SessionInfo, TensorInfo

log = logging.getLogger("tritium.backend.onnxruntime")


def needs_auto_complete(config: mc.ModelConfig) -> bool:
    inputs = len(config.input) + len(config.batch_input)
    return not (inputs > 0 and len(config.output) > 0)


def auto_complete(
    config: mc.ModelConfig,
    info: SessionInfo,
    default_max_batch_size: int,
    sequence: SequenceTensors,
) -> None:
    """Fill `config` in place from the session's tensors (AutoCompleteConfig).

    The sequence batcher's control and state tensors are left out: the scheduler fills those,
    so listing them as inputs would make every client request miss them. (Triton lists them,
    and the instance then fails to load, counting them twice.)"""
    no_inputs = len(config.input) + len(config.batch_input) == 0
    no_outputs = len(config.output) == 0
    _auto_complete_max_batch(config, info, default_max_batch_size)
    if no_inputs:
        inputs = [t for t in info.inputs.values() if t.name not in sequence.input_names]
        _fill(config.input, inputs, config.max_batch_size)
    if no_outputs:
        outputs = [t for t in info.outputs.values() if t.name not in sequence.output_names]
        _fill(config.output, outputs, config.max_batch_size)


def _auto_complete_max_batch(
    config: mc.ModelConfig, info: SessionInfo, default_max_batch_size: int
) -> None:
    tensors = list(info.inputs.values()) + list(info.outputs.values())
    batchable = all(t.dims and t.dims[0] == -1 for t in tensors)
    if batchable:
        if config.max_batch_size == 0:
            config.max_batch_size = max(default_max_batch_size, 0)
            log.warning(
                "autofilled max_batch_size to %d for model '%s' since batching is supported "
                "but no max_batch_size is specified in model configuration. Must specify "
                "max_batch_size to utilize autofill with a larger max batch size",
                config.max_batch_size,
                config.name,
            )
        has_batcher = config.HasField("dynamic_batching") or config.HasField("sequence_batching")
        if config.max_batch_size > 1 and not has_batcher:
            config.dynamic_batching.SetInParent()
    elif config.max_batch_size != 0:
        raise TritonError.invalid_arg(
            f"autofill failed for model '{config.name}': model does not support batching "
            "while non-zero max_batch_size is specified"
        )


def _fill(target: Any, tensors: Iterable[TensorInfo], max_batch_size: int) -> None:
    """AutoCompleteIO: one config entry per model tensor, the batch dimension left out."""
    del target[:]
    for tensor in tensors:
        entry = target.add(name=tensor.name, data_type=tensor.config_type)
        dims = _config_dims(tensor, max_batch_size)
        if dims:
            entry.dims.extend(dims)
        else:  # a scalar travels as [1], reshaped to the model's shape
            entry.dims.append(1)
            if max_batch_size > 0:
                entry.reshape.SetInParent()


def _config_dims(tensor: TensorInfo, max_batch_size: int) -> tuple[int, ...]:
    return tensor.dims[1:] if max_batch_size > 0 else tensor.dims
