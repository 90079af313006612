"""The KServe-v2 HTTP infer response body: a JSON header, then the raw bytes of binary outputs.

Each output goes out as the request asked (`OutputPlan`): as JSON `data`, as raw bytes after the
header (`binary_data_size` tells how many), or as its top classes (classification extension).
The `data` of a large output is written a slice at a time (`json_data.JsonSplice`), so that
the thread writing it lets others have the interpreter lock meanwhile.
"""

from __future__ import annotations

from json.encoder import encode_basestring as _quote
from typing import Any

import numpy as np

from ...request import InferenceRequest, InferenceResponse
from ...tensor import numpy_dtype, serialize_bytes
from ..extensions.classification import classify
from ..extensions.json_codec import utf8
from ..extensions.shared_memory import write_output
from .json_data import LARGE_OUTPUT, JsonSplice, json_from_array, json_text_in_slices
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
    if not response.parameters and not plan.regions:
        answer = _all_binary(response, request, plan)
        if answer is not None:
            return answer
    outputs_json: list[dict[str, Any]] = []
    blobs: list[Any] = []
    splice = JsonSplice()
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
        elif getattr(array, "size", 0) >= LARGE_OUTPUT:
            entry["data"] = splice.placeholder(json_text_in_slices(datatype, array))
        else:
            entry["data"] = json_from_array(datatype, array)
        outputs_json.append(entry)

    document: dict[str, Any] = {}
    if response.id:
        document["id"] = response.id
    document["model_name"] = response.model_name or request.model_name
    document["model_version"] = str(response.model_version)
    if response.parameters:
        document["parameters"] = response.parameters
    document["outputs"] = outputs_json
    return splice.dumps(document), blobs


def _all_binary(response: InferenceResponse, request: InferenceRequest, plan: OutputPlan
                ) -> tuple[bytes, list[Any]] | None:
    """The common answer, every output binary and unclassified, with the header written from
    cached pieces (the bytes the JSON encoder would make, at a fraction of its cost); None for
    any other."""
    requested = plan.requested
    entries: list[bytes] = []
    blobs: list[Any] = []
    for tensor in response.outputs:
        if requested:
            choice = requested.get(tensor.name)
            if choice is None:
                continue
            if choice != (True, 0):
                return None
        elif not plan.default_binary:
            return None
        raw = _raw_bytes(tensor.datatype, tensor.data)
        size = len(raw)
        key = (tensor.name, tensor.datatype, tensor.shape, size)
        entry = _BINARY_ENTRIES.get(key)
        if entry is None:
            if not all(type(d) is int for d in tensor.shape):
                return None  # e.g. numpy integers: the JSON encoder's way
            entry = _cache(_BINARY_ENTRIES, key, utf8(_BINARY_ENTRY % (
                _quote(tensor.name), _quote(tensor.datatype),
                ",".join([str(d) for d in tensor.shape]), size)))
        entries.append(entry)
        if size:
            blobs.append(raw)
    model = (response.model_name or request.model_name, str(response.model_version))
    head = _HEADS.get(model)
    if head is None:
        head = _cache(_HEADS, model, utf8(_HEAD % (_quote(model[0]), _quote(model[1]))))
    if response.id:
        head = b'{"id":' + utf8(_quote(response.id)) + b"," + head[1:]
    return head + b",".join(entries) + b"]}", blobs


def _cache(cache: dict[Any, bytes], key: Any, value: bytes) -> bytes:
    """Keep `value` for `key`; bounded, as names and shapes may vary without end."""
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[key] = value
    return value


# How the JSON encoder (compact separators, non-ASCII kept) writes a header whose outputs are
# all binary, in pieces: the head by model, each output's entry by (name, datatype, shape,
# size), of which a model answers with few.
_HEAD = '{"model_name":%s,"model_version":%s,"outputs":['
_BINARY_ENTRY = '{"name":%s,"datatype":%s,"shape":[%s],"parameters":{"binary_data_size":%d}}'
_CACHE_LIMIT = 1024
_HEADS: dict[tuple[str, str], bytes] = {}
_BINARY_ENTRIES: dict[tuple[str, str, tuple[int, ...], int], bytes] = {}


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
