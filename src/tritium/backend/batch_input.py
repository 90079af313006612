"""Ragged inputs and `batch_input` tensors: how a batch's inputs reach a framework model.

An input configured with `allow_ragged_batch` is not stacked along a batch dimension: the
requests' tensors, whatever their shapes, are flattened and concatenated into one 1-D tensor (as
Triton's BackendInputCollector does). So that the model can tell the requests apart again, the
configuration may add `batch_input` tensors, computed from the shapes of a source input in each
request and fed under the entry's `target_name`(s) with its `data_type` (Triton's
BatchInputShape / ProcessBatchInput). None of them gets a batch dimension:

- BATCH_ELEMENT_COUNT [requests]: each request's element count of the source input;
- BATCH_ACCUMULATED_ELEMENT_COUNT [requests]: the running sum of those counts;
- BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO [requests + 1]: the same, after a leading 0;
- BATCH_MAX_ELEMENT_COUNT_AS_SHAPE [largest count]: only the shape says something (zeros here;
  Triton leaves the buffer unset);
- BATCH_ITEM_SHAPE [batch items, rank - 1]: the shape (less the batch dimension) of every batch
  item, repeated for a request that holds several;
- BATCH_ITEM_SHAPE_FLATTEN [batch items * (rank - 1)]: the same values in one dimension.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from tritonclient.grpc import model_config_pb2 as mc

from ..errors import TritonError
from ..request import InferenceRequest
from ..tensor import element_count, numpy_dtype, wire_datatype

Shapes = list[tuple[int, ...]]


def gather_ragged(name: str, requests: Sequence[InferenceRequest]) -> np.ndarray:
    """Input `name` of every request, flattened and concatenated: shape [total elements]."""
    return np.concatenate([r.inputs[name].data.reshape(-1) for r in requests])


def batch_inputs(
    config: mc.ModelConfig, requests: Sequence[InferenceRequest]
) -> dict[str, np.ndarray]:
    """Every configured `batch_input` tensor of this batch, by target name."""
    tensors: dict[str, np.ndarray] = {}
    for batch_input in config.batch_input:
        source = batch_input.source_input[0]
        shapes = [_source_shape(r, source) for r in requests]
        dtype = numpy_dtype(wire_datatype(batch_input.data_type))
        values = _KINDS[batch_input.kind](shapes).astype(dtype)
        for target in batch_input.target_name:
            tensors[target] = values
    return tensors


def _source_shape(request: InferenceRequest, source: str) -> tuple[int, ...]:
    tensor = request.inputs.get(source)
    if tensor is None:
        raise TritonError.invalid_arg(
            f"batch input needs input '{source}', which the request does not provide"
        )
    return tuple(tensor.shape)


def _element_counts(shapes: Shapes) -> np.ndarray:
    return np.array([element_count(s) for s in shapes], dtype=np.int64)


def _accumulated(shapes: Shapes) -> np.ndarray:
    return np.cumsum(_element_counts(shapes))


def _accumulated_with_zero(shapes: Shapes) -> np.ndarray:
    return np.concatenate([np.zeros(1, dtype=np.int64), _accumulated(shapes)])


def _max_element_count_as_shape(shapes: Shapes) -> np.ndarray:
    return np.zeros(int(_element_counts(shapes).max(initial=0)), dtype=np.int64)


def _item_shapes(shapes: Shapes) -> np.ndarray:
    """One row per batch item (the source's first dimension is the batch dimension)."""
    rank = len(shapes[0]) - 1 if shapes else 0
    rows = [list(s[1:]) for s in shapes for _ in range(s[0] if s else 0)]
    if any(len(row) != rank for row in rows):
        raise TritonError.invalid_arg(
            "batch input BATCH_ITEM_SHAPE needs source inputs of the same rank in every request"
        )
    return np.array(rows, dtype=np.int64).reshape(len(rows), rank)


def _item_shapes_flatten(shapes: Shapes) -> np.ndarray:
    return _item_shapes(shapes).reshape(-1)


_KINDS: dict[int, Callable[[Shapes], np.ndarray]] = {
    mc.BatchInput.BATCH_ELEMENT_COUNT: _element_counts,
    mc.BatchInput.BATCH_ACCUMULATED_ELEMENT_COUNT: _accumulated,
    mc.BatchInput.BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO: _accumulated_with_zero,
    mc.BatchInput.BATCH_MAX_ELEMENT_COUNT_AS_SHAPE: _max_element_count_as_shape,
    mc.BatchInput.BATCH_ITEM_SHAPE: _item_shapes,
    mc.BatchInput.BATCH_ITEM_SHAPE_FLATTEN: _item_shapes_flatten,
}
