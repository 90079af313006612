"""ModelInferResponse and ModelStreamInferResponse bytes: Triton's gRPC answers (infer_handler.cc's
InferResponseCompleteCommon, stream_infer_handler.cc), written mostly by hand.

Speed: responses are serialised by hand, output tensors appended straight from their numpy
buffers (one copy, into the message), every output as `raw_output_contents` as Triton sends
them; the fields that repeat from one response to the next (model name and version, each
output's name, datatype and shape) are kept written.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tritonclient.grpc import service_pb2 as pb

from ...datatypes import NUMPY_DTYPES
from ...errors import TritonError
from ...request import InferenceRequest, InferenceResponse
from ...tensor import Tensor, serialize_bytes
from ..extensions.classification import classify, requested_classes
from ..extensions.shared_memory import OutputRegion, write_output
from .protowire import string_field, varint

# -- ModelInferResponse: encoding ---------------------------------------------------------------

_RAW_OUTPUT_TAG = b"\x32"  # field 6 (raw_output_contents), wire type 2


def encode_infer_response(
    response: InferenceResponse,
    request: InferenceRequest,
    *,
    final: bool | None = None,
    regions: dict[str, OutputRegion] | None = None,
    config: Any = None,
    labels: dict[str, list[str]] | None = None,
) -> bytes:
    """InferenceResponse -> ModelInferResponse wire bytes, every output as raw contents.

    The small part (names, shapes, parameters) is written as protobuf writes it; the tensors
    are appended as raw_output_contents fields straight from their buffers (a protobuf message
    may list its fields in any order, and repeated fields concatenate). `final`
    (ModelStreamInfer only) adds the `triton_final_response` parameter. Outputs in `regions`
    are written there and go out as an empty raw entry, as Triton sends them. An output
    requested with `classification: N` goes out as its top N classes (BYTES), which reads the
    model's `config` and its `labels` (by output).
    """
    # The small part is written field by field (what upb would write, in its order): building
    # a message to serialise cost more than the rest of the encoding together.
    key = (response.model_name, response.model_version)
    head = _MODEL_FIELDS.get(key)
    if head is None:
        if len(_MODEL_FIELDS) >= _CACHE_LIMIT:
            _MODEL_FIELDS.clear()
        head = _MODEL_FIELDS[key] = (string_field(b"\x0a", response.model_name)
                                     + string_field(b"\x12", response.model_version))
    parts: list[Any] = [head, string_field(b"\x1a", response.id) if response.id else b""]
    if response.parameters or final is not None:
        # A serialised message holding only the map is that map's field-4 entries.
        holder = pb.ModelInferResponse()
        if response.parameters:
            _set_parameters(holder.parameters, response.parameters)
        if final is not None:
            holder.parameters[FINAL_RESPONSE].bool_param = final
        parts.append(holder.SerializeToString())
    outputs = response.outputs
    classified: dict[str, int] = {}
    if request.requested_outputs:
        wanted = set(request.requested_output_names)
        outputs = [t for t in outputs if t.name in wanted]
        classified = requested_classes(request)
    contents: list[Any] = []
    model_labels = labels if classified and labels is not None else {}
    for tensor in outputs:
        if classified and tensor.name in classified:
            datatype, shape, data = classify(tensor, classified[tensor.name], config,
                                             model_labels.get(tensor.name))
            tensor = Tensor(tensor.name, datatype, tuple(shape), data, tensor.parameters)
        parts.append(_output_entry(tensor))
        payload: Any
        if regions and tensor.name in regions:
            write_output(regions[tensor.name], tensor.name, tensor.datatype, tensor.data)
            payload, size = b"", 0
        elif tensor.datatype == "BYTES":
            payload = serialize_bytes(np.asarray(tensor.data, dtype=np.object_))
            size = len(payload)
        else:
            array = tensor.data
            dtype = NUMPY_DTYPES.get(tensor.datatype)
            if dtype is None:
                raise TritonError.internal(
                    f"output '{tensor.name}' has invalid datatype '{tensor.datatype}'"
                )
            if not isinstance(array, np.ndarray) or array.dtype != dtype \
                    or not array.flags.c_contiguous:
                array = np.ascontiguousarray(array, dtype=dtype)
            size = array.nbytes
            payload = array if size else b""  # joined as its (C-contiguous) buffer
        contents.append(_RAW_OUTPUT_TAG + varint(size))
        contents.append(payload)
    parts += contents
    return b"".join(parts)


# Written fields kept for the next response: model_name + model_version by model, and the
# InferOutputTensor entries (field 5) by (name, datatype, shape), of which a model answers with
# few. Bounded, as shapes may vary without end.
_CACHE_LIMIT = 1024
_MODEL_FIELDS: dict[tuple[str, str], bytes] = {}
_OUTPUT_ENTRIES: dict[tuple[str, str, tuple[int, ...]], bytes] = {}


def _output_entry(tensor: Tensor) -> bytes:
    """The output's name, datatype, shape (and parameters) as one `outputs` entry."""
    key = (tensor.name, tensor.datatype, tensor.shape)
    entry = None if tensor.parameters else _OUTPUT_ENTRIES.get(key)
    if entry is not None:
        return entry
    dims = b"".join(varint(d & 0xFFFFFFFFFFFFFFFF) for d in tensor.shape)  # int64, packed
    body = string_field(b"\x0a", tensor.name) + string_field(b"\x12", tensor.datatype)
    if dims:
        body += b"\x1a" + varint(len(dims)) + dims
    if tensor.parameters:
        holder = pb.ModelInferResponse.InferOutputTensor()
        _set_parameters(holder.parameters, tensor.parameters)
        body += holder.SerializeToString()
    entry = b"\x2a" + varint(len(body)) + body
    if not tensor.parameters:
        if len(_OUTPUT_ENTRIES) >= _CACHE_LIMIT:
            _OUTPUT_ENTRIES.clear()
        _OUTPUT_ENTRIES[key] = entry
    return entry


def _set_parameters(target: Any, values: dict[str, Any]) -> None:
    for key, value in values.items():
        param = target[key]
        if isinstance(value, bool):
            param.bool_param = value
        elif isinstance(value, int):
            if value >= 2**63:
                param.uint64_param = value
            else:
                param.int64_param = value
        elif isinstance(value, float):
            param.double_param = value
        elif isinstance(value, (bytes, bytearray)):
            param.string_param = bytes(value).decode("utf-8", "replace")
        else:
            param.string_param = str(value)


# -- ModelStreamInferResponse ------------------------------------------------------------------

# The response parameter telling a ModelStreamInfer client whether a response is its request's
# last (stream_infer_handler.cc sets it on every response it writes).
FINAL_RESPONSE = "triton_final_response"
_STREAM_ERROR_TAG = b"\x0a"  # ModelStreamInferResponse.error_message: field 1, wire type 2
_STREAM_RESPONSE_TAG = b"\x12"  # ModelStreamInferResponse.infer_response: field 2, wire type 2


def encode_stream_response(infer_response: bytes, error_message: str = "") -> bytes:
    """ModelStreamInferResponse wire bytes around encoded ModelInferResponse bytes.

    Built by hand so the (possibly large) inner message is not parsed or copied through protobuf.
    """
    parts: list[bytes] = []
    if error_message:
        text = error_message.encode("utf-8", "replace")
        parts += (_STREAM_ERROR_TAG, varint(len(text)), text)
    parts += (_STREAM_RESPONSE_TAG, varint(len(infer_response)), infer_response)
    return b"".join(parts)


def encode_stream_head(
    message: pb.ModelInferRequest, final: bool | None, error_message: str = ""
) -> bytes:
    """A ModelStreamInferResponse that carries no tensors: the request's id, model name and
    version as the client sent them, and the final flag when `final` is not None.

    Triton writes these for an error response (with error_message) and for the empty final
    response; errors that stop a request before it runs carry only the id (final None).
    """
    head = pb.ModelInferResponse(id=message.id)
    if final is not None:
        head.model_name = message.model_name
        head.model_version = message.model_version
        head.parameters[FINAL_RESPONSE].bool_param = final
    return encode_stream_response(head.SerializeToString(), error_message)
