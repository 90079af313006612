"""The rule `tritium infer` and the pytest plugin shape inputs by (tritium.batch_dimension)."""

from __future__ import annotations

import numpy as np
import pytest

from tritium.batch_dimension import shape_for_input


@pytest.mark.parametrize("value, dims, max_batch_size, shape", [
    (np.array([1, 2, 3]), [-1], 8, (1, 3)),          # one rank short: a batch of one
    (np.ones((2, 3)), [-1], 8, (2, 3)),              # full rank: as is
    (np.array([1, 2, 3]), [-1], 0, (3,)),            # a model that does not batch: as is
    (np.array(5), [1], 8, (1, 1)),                   # a single value: one element, batched
    (np.array(5), [], 8, (1,)),                      # a scalar input of a batching model
    (np.ones((2, 2, 2)), [-1], 8, (2, 2, 2)),        # any other rank: the server judges it
])
def test_shape_for_input(value, dims, max_batch_size, shape):
    assert shape_for_input(value, dims, max_batch_size).shape == shape
