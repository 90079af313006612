"""Triton wire datatype names and their numpy dtypes, with no dependency beyond numpy.

Kept apart from `tensor.py` (which needs Triton's protobuf schema) because Python-backend stub
processes import it too, and they may run in an execution environment without protobuf.
"""

from __future__ import annotations

import numpy as np

# Wire datatype -> numpy dtype. BF16 has no numpy type: its elements travel as raw uint16.
NUMPY_DTYPES: dict[str, np.dtype] = {
    "BOOL": np.dtype(np.bool_),
    "UINT8": np.dtype(np.uint8),
    "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32),
    "UINT64": np.dtype(np.uint64),
    "INT8": np.dtype(np.int8),
    "INT16": np.dtype(np.int16),
    "INT32": np.dtype(np.int32),
    "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16),
    "FP32": np.dtype(np.float32),
    "FP64": np.dtype(np.float64),
    "BF16": np.dtype(np.uint16),
    "BYTES": np.dtype(np.object_),
}
