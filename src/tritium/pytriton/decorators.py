"""`pytriton.decorators`: the inference-function decorators."""

from tritium.inprocess.pytriton.context import TritonContext
from tritium.inprocess.pytriton.decorators import (
    TRITON_CONTEXT_FIELD_NAME,
    ConstantPadder,
    batch,
    convert_output,
    fill_optionals,
    first_value,
    get_inference_request_batch_size,
    group_by_keys,
    group_by_values,
    pad_batch,
    sample,
    triton_context,
)

__all__ = ["TRITON_CONTEXT_FIELD_NAME", "ConstantPadder", "TritonContext", "batch",
           "convert_output", "fill_optionals", "first_value", "get_inference_request_batch_size",
           "group_by_keys", "group_by_values", "pad_batch", "sample", "triton_context"]
