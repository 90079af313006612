"""Triton's classification extension: an output sent as its top classes instead of its values.

A client asks for it per output (`classification: N` in the HTTP output parameters); the output
goes back as BYTES "value:index" strings, the N largest values of each batch entry, largest first.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import TritonError
from ..tensor import Tensor


def classify(tensor: Tensor, classes: int, config: Any) -> tuple[str, list[int], np.ndarray]:
    """(datatype, shape, data) of `tensor`'s top `classes` per batch entry.

    `config` is the model's ModelConfig: batching decides what a row is, and label files (not
    supported yet) would name the classes.
    """
    for spec in config.output:
        if spec.name == tensor.name and spec.label_filename:
            raise TritonError.unsupported(
                f"classification of output '{tensor.name}' with labels ('label_filename') is "
                "not supported yet"
            )
    batching = config.max_batch_size > 0
    if tensor.datatype in ("BYTES", "FP16", "BF16", "BOOL"):
        raise TritonError.invalid_arg(
            f"class result not available for output '{tensor.name}' due to unsupported type "
            f"'{tensor.datatype}'"
        )
    array = np.asarray(tensor.data)
    shape = list(tensor.shape)
    batch = shape[0] if batching and shape else 0
    rows = array.reshape(batch, -1) if batch > 0 else array.reshape(1, -1)
    per_row = rows.shape[1]
    take = min(classes, per_row)
    floating = array.dtype.kind == "f"
    results: list[bytes] = []
    for row in rows:
        order = np.argsort(-row.astype(np.float64), kind="stable")[:take]
        for index in order.tolist():
            value = row[index]
            text = f"{float(value):f}" if floating else f"{int(value)}"
            results.append(f"{text}:{index}".encode())
    out = np.empty(len(results), dtype=np.object_)
    out[:] = results
    out_shape = [batch, take] if batch > 0 else [take]
    return "BYTES", out_shape, out.reshape(out_shape)
