"""A raw input: one tensor's bytes with no name, datatype or shape, all taken from the model's
configuration (Triton's InferenceRequest raw input). It comes from an HTTP body sent with
`Inference-Header-Content-Length: 0` and from a compiled backend's
TRITONSERVER_InferenceRequestAddRawInput. The model must have exactly one input, with at most
one variable-sized dimension (sized from the byte count); a BYTES input must have shape [1],
and the whole data is its one element.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import TritonError
from .tensor import Tensor, input_from_wire, numpy_dtype, wire_datatype


def raw_input_tensor(config: Any, data: bytes, model_name: str, prefix: str = "",
                     given: int = 1) -> Tensor:
    """The tensor `data` is for the model of `config` (its ModelConfig), as Triton deduces it.
    `given`: how many inputs the request has (a raw one must be alone); `prefix` begins each
    error message (the request's log prefix)."""
    if given != 1 or len(config.input) != 1:
        raise TritonError.invalid_arg(
            f"{prefix}Raw request must only have 1 input (found {given}) to be deduced but got "
            f"{len(config.input)} inputs in '{model_name}' model configuration"
        )
    spec = config.input[0]
    datatype = wire_datatype(spec.data_type)
    shape: list[int] = [1] if config.max_batch_size > 0 else []
    dynamic_axis = -1
    fixed = 1
    for dim in spec.dims:
        if dim == -1:
            if dynamic_axis != -1:
                raise TritonError.invalid_arg(
                    f"{prefix}The shape of the raw input '{spec.name}' can not be deduced "
                    "because there are more than one variable-sized dimension"
                )
            dynamic_axis = len(shape)
        else:
            fixed *= dim
        shape.append(dim)
    if datatype == "BYTES":
        if dynamic_axis != -1 or fixed != 1:
            raise TritonError.invalid_arg(
                f"{prefix}For BYTE datatype raw input '{spec.name}', the model must have "
                "input shape [1]"
            )
        array: np.ndarray = np.empty(1, dtype=np.object_)
        array[0] = data
        array = array.reshape(shape)
    else:
        if dynamic_axis != -1:
            itemsize = numpy_dtype(datatype).itemsize
            shape[dynamic_axis] = len(data) // fixed // itemsize if fixed else 0
        array = input_from_wire(data, datatype, shape, "raw_input", model_name, prefix)
    return Tensor(spec.name, datatype, tuple(shape), array)
