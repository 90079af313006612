"""The one rule by which Tritium's conveniences (`tritium infer` and the pytest plugin's
`server.infer`) shape a value for a model input; clients and frontends never reshape.

For a model that batches (max_batch_size > 0), a value whose rank is one less than the input's
configured `dims` (the dims without the batch dimension) gets a leading batch of one; a value
of full rank passes as is, as does any other (the server judges it). A single value given for
an input with dims becomes one element first (`X=3` for dims [1]).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def shape_for_input(array: np.ndarray, dims: Sequence[int], max_batch_size: int) -> np.ndarray:
    """`array` shaped for an input of configured `dims` under the rule above."""
    rank = len(dims)
    if array.ndim == 0 and rank > 0:
        array = array.reshape((1,) * rank)
    if max_batch_size > 0 and array.ndim == rank:
        array = array[np.newaxis, ...]
    return array
