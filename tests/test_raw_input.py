"""Triton's deduction of a raw input from the model's configuration (raw_input.py), shared by
the HTTP frontend (a body with Inference-Header-Content-Length: 0, tested end to end there) and
TRITONSERVER_InferenceRequestAddRawInput (tests/backend/test_native_backends.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tritium.config import model_config_from_json
from tritium.errors import Code, TritonError
from tritium.raw_input import raw_input_tensor


def _config(data_type: str, dims: list[int], batch: int = 0, inputs: int = 1):
    return model_config_from_json({
        "name": "m", "max_batch_size": batch,
        "input": [{"name": f"IN{i}", "data_type": data_type, "dims": dims}
                  for i in range(inputs)],
    })


def test_the_variable_dimension_is_sized_from_the_bytes_behind_a_batch_dimension():
    tensor = raw_input_tensor(_config("TYPE_FP32", [2, -1], batch=4),
                              np.arange(6, dtype=np.float32).tobytes(), "m")
    assert (tensor.name, tensor.datatype, tensor.shape) == ("IN0", "FP32", (1, 2, 3))
    np.testing.assert_array_equal(tensor.data, np.arange(6, dtype=np.float32).reshape(1, 2, 3))


def test_bytes_are_one_element_of_a_shape_one_input():
    tensor = raw_input_tensor(_config("TYPE_STRING", [1]), b"\x00raw", "m")
    assert tensor.shape == (1,)
    assert tensor.data[0] == b"\x00raw"


@pytest.mark.parametrize("config, given, message", [
    (_config("TYPE_FP32", [-1], inputs=2), 1,
     "Raw request must only have 1 input (found 1) to be deduced but got 2 inputs in 'm' model "
     "configuration"),
    (_config("TYPE_FP32", [-1]), 2,
     "Raw request must only have 1 input (found 2) to be deduced but got 1 inputs in 'm' model "
     "configuration"),
    (_config("TYPE_FP32", [-1, -1]), 1,
     "The shape of the raw input 'IN0' can not be deduced because there are more than one "
     "variable-sized dimension"),
    (_config("TYPE_STRING", [2]), 1,
     "For BYTE datatype raw input 'IN0', the model must have input shape [1]"),
])
def test_what_cannot_be_deduced_is_refused_with_tritons_words(config, given, message):
    with pytest.raises(TritonError) as caught:
        raw_input_tensor(config, b"\x00" * 8, "m", given=given)
    assert caught.value.code is Code.INVALID_ARG
    assert caught.value.message == message
