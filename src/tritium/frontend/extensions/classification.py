"""Triton's classification extension: an output sent as its top classes instead of its values.

A client asks for it per output (`classification: N` in the output parameters, HTTP and gRPC);
the output goes back as BYTES "value:index" strings ("value:index:label" where the output has a
label for that index), the N largest values of each batch entry, largest first.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import TritonError
from ...tensor import Tensor


def classify(tensor: Tensor, classes: int, config: Any,
             labels: list[str] | None = None) -> tuple[str, list[int], np.ndarray]:
    """(datatype, shape, data) of `tensor`'s top `classes` per batch entry.

    `config` is the model's ModelConfig (batching decides what a row is); `labels` are the
    output's labels (`Model.labels`), if it has any.
    """
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
            label = labels[index] if labels and index < len(labels) else ""
            results.append((f"{text}:{index}:{label}" if label else f"{text}:{index}").encode())
    out = np.empty(len(results), dtype=np.object_)
    out[:] = results
    out_shape = [batch, take] if batch > 0 else [take]
    return "BYTES", out_shape, out.reshape(out_shape)


def requested_classes(request: Any) -> dict[str, int]:
    """Output name -> class count, for the outputs an InferenceRequest asks to classify."""
    return {output.name: output.parameters["classification"]
            for output in request.requested_outputs
            if output.parameters and "classification" in output.parameters}
