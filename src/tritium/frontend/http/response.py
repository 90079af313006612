"""The KServe-v2 HTTP infer response body: a JSON header, then the raw bytes of binary outputs.

Each output goes out as the request asked (`OutputPlan`): as JSON `data`, as raw bytes after the
header (`binary_data_size` tells how many), or as its top classes (classification extension).
"""

from __future__ import annotations

from json.encoder import encode_basestring as _quote
from typing import Any

import numpy as np

from ...request import InferenceRequest, InferenceResponse
from ...tensor import numpy_dtype, serialize_bytes
from ..extensions.classification import classify
from ..extensions.json_codec import dumps, utf8
from ..extensions.shared_memory import write_output
from .json_data import json_from_array
from .request import OutputPlan


def encode_infer_response(
    response: InferenceResponse,
    request: InferenceRequest,
    plan: OutputPlan,
    config: Any,
) -> tuple[bytes, list[Any]]:
    """The JSON header and the binary parts (bytes-like) that follow it, in output order.

    `config` (the model's ModelConfig) is read for classification only: batching and labels.
    """
    outputs_json: list[dict[str, Any]] = []
    blobs: list[Any] = []
    # While every output goes out binary, the header is also written directly as text (the
    # same bytes the JSON encoder would make, at a fraction of its cost).
    texts: list[str] | None = None if response.parameters else []
    requested = plan.requested
    regions = plan.regions
    for tensor in response.outputs:
        if requested:
            choice = requested.get(tensor.name)
            if choice is None:
                continue
            binary, classes = choice
        else:
            binary, classes = plan.default_binary, 0
        datatype, shape, array = tensor.datatype, list(tensor.shape), tensor.data
        if regions and tensor.name in regions:
            # Written into the client's region: the response only describes it.
            write_output(regions[tensor.name], tensor.name, datatype, array)
            outputs_json.append({"name": tensor.name, "datatype": datatype, "shape": shape})
            texts = None
            continue
        if classes > 0:
            labels = plan.labels.get(tensor.name) if plan.labels else None
            datatype, shape, array = classify(tensor, classes, config, labels)
        entry: dict[str, Any] = {"name": tensor.name, "datatype": datatype, "shape": shape}
        if binary:
            raw = _raw_bytes(datatype, array)
            size = len(raw)
            entry["parameters"] = {"binary_data_size": size}
            if size:
                blobs.append(raw)
            if texts is not None:
                texts.append(_BINARY_ENTRY % (
                    _quote(tensor.name), _quote(datatype), ",".join([str(d) for d in shape]), size
                ))
        else:
            entry["data"] = json_from_array(datatype, array)
            texts = None
        outputs_json.append(entry)

    model_name = response.model_name or request.model_name
    model_version = str(response.model_version)
    if texts is not None and all(type(d) is int for e in outputs_json for d in e["shape"]):
        text = _HEADER % (_quote(model_name), _quote(model_version), ",".join(texts))
        if response.id:
            text = '{"id":' + _quote(response.id) + "," + text[1:]
        return utf8(text), blobs

    document: dict[str, Any] = {}
    if response.id:
        document["id"] = response.id
    document["model_name"] = model_name
    document["model_version"] = model_version
    if response.parameters:
        document["parameters"] = response.parameters
    document["outputs"] = outputs_json
    return dumps(document), blobs


# How the JSON encoder (compact separators, non-ASCII kept) writes a header whose outputs are
# all binary.
_HEADER = '{"model_name":%s,"model_version":%s,"outputs":[%s]}'
_BINARY_ENTRY = '{"name":%s,"datatype":%s,"shape":[%s],"parameters":{"binary_data_size":%d}}'


def _raw_bytes(datatype: str, array: np.ndarray) -> Any:
    """An output's wire bytes; a zero-copy view when the array already has the wire layout."""
    if datatype == "BYTES":
        return serialize_bytes(np.asarray(array))
    dtype = numpy_dtype(datatype)
    array = np.asarray(array)
    if array.dtype != dtype:
        array = array.astype(dtype)
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    if array.size == 0:
        return b""
    return array.data.cast("B")
