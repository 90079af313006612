"""The KServe-v2 HTTP body codec: JSON request/response plus Triton's binary tensor extension.

A request body is a JSON header, optionally followed by raw tensor bytes
(`Inference-Header-Content-Length` tells where the JSON ends; inputs with a `binary_data_size`
parameter take their bytes from the tail, in order). `Inference-Header-Content-Length: 0` makes
the whole body the raw data of a model's single input. A response is a JSON header followed by
the raw bytes of every output sent as binary.

Messages follow Triton's http_server.cc wording so clients see the same text. Where Triton
answers a malformed request with 500 (its JSON helpers hard-code INTERNAL) we answer 400: the
fault is the client's. Tensors are built without copying the body: `np.frombuffer` on slices of
the received bytes.
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np

from ..errors import TritonError
from ..request import (
    SEQUENCE_END,
    SEQUENCE_START,
    InferenceRequest,
    InferenceResponse,
    RequestedOutput,
)
from ..tensor import DATATYPES, Tensor, numpy_dtype, serialize_bytes, wire_datatype

_UINT64_MAX = (1 << 64) - 1
_INT64_MAX = (1 << 63) - 1

# How each datatype's JSON elements are read (rapidjson accessor Triton uses) and the message
# its failure produces.
_FAMILY: dict[str, str] = {
    "BOOL": "bool",
    "UINT8": "uint", "UINT16": "uint", "UINT32": "uint", "UINT64": "uint",
    "INT8": "int", "INT16": "int", "INT32": "int", "INT64": "int",
    "FP32": "float", "FP64": "float",
    "BYTES": "bytes",
}
_NOT_A = {
    "bool": "attempt to access JSON non-boolean as boolean",
    "uint": "attempt to access JSON non-unsigned-integer as unsigned-integer",
    "int": "attempt to access JSON non-signed-integer as signed-integer",
    "float": "attempt to access JSON non-number as double",
    "bytes": "attempt to access JSON non-string as string",
}
_ALLOWED_TYPES = {
    "bool": frozenset((bool,)),
    "uint": frozenset((int,)),
    "int": frozenset((int,)),
    "float": frozenset((int, float)),
    "bytes": frozenset((str,)),
}
_NOT_ARRAY = "attempt to access JSON non-array as array"
_NOT_STRING = "attempt to access JSON non-string as string"
_NOT_UINT = _NOT_A["uint"]
_NOT_BOOL = _NOT_A["bool"]

_SHAPE_MISMATCH = "Unable to parse 'data': Shape does not match true shape of 'data' field"

_U32 = struct.Struct("<I")
# Compact like Triton's writer; non-ASCII (and, through surrogateescape, non-UTF-8 BYTES) goes
# out raw as Triton writes it.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def utf8(text: str) -> bytes:
    """str -> bytes, restoring non-UTF-8 bytes that came in through surrogateescape."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate written as a JSON escape
        return text.encode("utf-8", "surrogatepass")


def _missing(member: str) -> str:
    return f"attempt to access non-existing object member '{member}'"


def _bad(what: str, why: str) -> TritonError:
    return TritonError.invalid_arg(f"Unable to parse '{what}': {why}")


def _is_uint(value: Any) -> bool:
    return type(value) is int and 0 <= value <= _UINT64_MAX


# -- request ---------------------------------------------------------------------------------


@dataclass(slots=True)
class OutputPlan:
    """How the response is to be encoded, as the request asked."""

    default_binary: bool = False
    # Explicitly requested outputs: name -> (binary, classification count).
    requested: dict[str, tuple[bool, int]] = field(default_factory=dict)


def decompress(body: bytes, encoding: str) -> bytes:
    """Undo a request's Content-Encoding (Triton accepts gzip and deflate)."""
    try:
        if encoding == "gzip":
            return zlib.decompress(body, 16 + zlib.MAX_WBITS)
        return zlib.decompress(body)
    except zlib.error as exc:
        raise TritonError.invalid_arg(f"failed to decompress the request body: {exc}") from None


def parse_header_length(value: str | None, content_length: int) -> int:
    """The JSON part's length from Inference-Header-Content-Length (the whole body without it).

    Like Triton (std::atoi), text that is not a number reads as 0, which asks for a raw request.
    """
    if value is None:
        return content_length
    text = value.strip()
    end = 1 if text[:1] in ("+", "-") else 0
    while end < len(text) and text[end].isdigit():
        end += 1
    try:
        parsed = int(text[:end])
    except ValueError:
        parsed = 0
    if parsed < 0 or parsed > content_length:
        raise TritonError.invalid_arg(
            f"inference header size should be in range (0, {content_length}), got: {value}"
        )
    return parsed


def _load_json(header: bytes) -> Any:
    try:
        return json.loads(header)
    except UnicodeDecodeError:
        text = header.decode("utf-8", "surrogateescape")
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise _json_error(exc) from None
        text = header.decode("utf-8", "surrogateescape")
    except RecursionError:
        raise TritonError.invalid_arg(
            "failed to parse the request JSON buffer: document nesting is too deep"
        ) from None
    # Non-UTF-8 bytes, or something after the document: rapidjson stops at a NUL byte (a
    # binary tail read as JSON), anything else after the document is an error.
    decoder = json.JSONDecoder()
    start = len(text) - len(text.lstrip(" \t\n\r"))
    try:
        document, end = decoder.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise _json_error(exc) from None
    except RecursionError:
        raise TritonError.invalid_arg(
            "failed to parse the request JSON buffer: document nesting is too deep"
        ) from None
    rest = text[end:].lstrip(" \t\n\r")
    if rest and rest[0] != "\x00":
        raise TritonError.invalid_arg(
            "failed to parse the request JSON buffer: The document root must not be followed "
            f"by other values. at {len(text) - len(rest)}"
        )
    return document


# Python's JSON messages -> rapidjson's (what Triton reports), where they correspond.
_RAPIDJSON_MESSAGES = {
    "Expecting value": "Invalid value.",
    "Expecting property name enclosed in double quotes": "Missing a name for object member.",
    "Expecting ':' delimiter": "Missing a colon after a name of object member.",
    "Unterminated string starting at": "Missing a closing quotation mark in string.",
    "Invalid control character at": "Invalid encoding in string.",
    "Invalid \\escape": "Invalid escape character in string.",
}


def _json_error(exc: json.JSONDecodeError) -> TritonError:
    message = _RAPIDJSON_MESSAGES.get(exc.msg, exc.msg + ".")
    return TritonError.invalid_arg(
        f"failed to parse the request JSON buffer: {message} at {exc.pos}"
    )


def decode_infer_request(
    model_name: str,
    model_version: int,
    body: bytes,
    header_length: int,
    config: Any,
) -> tuple[InferenceRequest, OutputPlan]:
    """Decode an infer body into an InferenceRequest (raises TritonError with Triton's text).

    `config` is the model's ModelConfig: a raw request (no JSON) takes its input's name,
    datatype and shape from it, and it names the expected datatype in datatype errors.
    """
    if header_length == 0:
        return _decode_raw(model_name, model_version, body, config)

    document = _load_json(body[:header_length] if header_length != len(body) else body)
    if not isinstance(document, dict):
        raise _bad("inputs", _missing("inputs"))
    request = InferenceRequest(model_name, model_version)
    plan = OutputPlan()
    # Same order as Triton: id, parameters, inputs (+ binary data), outputs.
    if "id" in document:
        request_id = document["id"]
        if type(request_id) is not str:
            raise _bad("id", _NOT_STRING)
        request.id = request_id
    if "parameters" in document:
        _decode_parameters(document["parameters"], request, plan)
    prefix = f"[request id: {request.id or '<id_unknown>'}] "
    view = memoryview(body)
    offset = _decode_inputs(document, request, view, header_length, config, prefix)
    if offset != len(body):
        raise TritonError.invalid_arg(
            f"unexpected additional input data for model '{model_name}'"
        )
    if "outputs" in document:
        _decode_outputs(document["outputs"], request, plan)
    return request, plan


def _decode_parameters(parameters: Any, request: InferenceRequest, plan: OutputPlan) -> None:
    if not isinstance(parameters, dict):
        raise TritonError.invalid_arg(
            "failed to get request params.: attempt to get members for non-object"
        )
    flags = 0
    for key, value in parameters.items():
        if key == "sequence_id":
            if _is_uint(value):
                request.correlation_id = value
            elif type(value) is str:
                request.correlation_id = value
            else:
                raise _bad("sequence_id", _NOT_STRING)
        elif key == "sequence_start":
            if type(value) is not bool:
                raise _bad("sequence_start", _NOT_BOOL)
            if value:
                flags |= SEQUENCE_START
        elif key == "sequence_end":
            if type(value) is not bool:
                raise _bad("sequence_end", _NOT_BOOL)
            if value:
                flags |= SEQUENCE_END
        elif key == "priority":
            if not _is_uint(value):
                raise _bad("priority", _NOT_UINT)
            request.priority = value
        elif key == "timeout":
            if not _is_uint(value):
                raise _bad("timeout", _NOT_UINT)
            request.timeout_us = value
        elif key == "binary_data_output":
            if type(value) is not bool:
                raise _bad("binary_data_output", _NOT_BOOL)
            plan.default_binary = value
        elif key.startswith("triton_"):
            raise TritonError.invalid_arg(
                "parameter keys starting with 'triton_' are reserved for Triton usage and "
                "should not be specified."
            )
        elif type(value) in (str, int, bool, float):
            request.parameters[key] = value
        else:
            raise TritonError.invalid_arg(
                f"parameter '{key}' has invalid type. It should be either 'int', 'bool', or "
                "'string'."
            )
    request.flags = flags


def _decode_inputs(
    document: dict[str, Any],
    request: InferenceRequest,
    view: memoryview,
    offset: int,
    config: Any,
    prefix: str,
) -> int:
    """Fill request.inputs; return the body offset after the last binary input."""
    model_name = request.model_name
    if "inputs" not in document:
        raise _bad("inputs", _missing("inputs"))
    inputs = document["inputs"]
    if type(inputs) is not list:
        raise _bad("inputs", _NOT_ARRAY)
    end = len(view)
    for item in inputs:
        if not isinstance(item, dict):
            item = {}
        params = item.get("parameters")
        if not isinstance(params, dict):
            params = {}
        _check_content_fields(item, params)
        name = _member_string(item, "name")
        datatype = _member_string(item, "datatype")
        shape = _shape(item)
        if name in request.inputs:
            raise TritonError.invalid_arg(f"{prefix}input '{name}' already exists in request")
        if datatype not in DATATYPES and (
            "binary_data_size" in params or _element_count(shape) == 0
        ):
            raise _invalid_datatype(name, model_name, prefix, config)

        if "binary_data_size" in params:
            size = params["binary_data_size"]
            if not _is_uint(size):
                raise _bad("binary_data_size", _NOT_UINT)
            available = end - offset
            if size > available:
                raise TritonError.invalid_arg(
                    f"unexpected size for input '{name}', expecting {size - available} "
                    f"additional bytes for model '{model_name}'"
                )
            data = _from_binary(name, datatype, shape, view[offset : offset + size],
                                model_name, prefix)
            offset += size
        elif "shared_memory_region" in params:
            region = params["shared_memory_region"]
            if type(region) is not str:
                raise _bad("shared_memory_region", _NOT_STRING)
            raise TritonError.not_found(f"Unable to find shared memory region: '{region}'")
        else:
            data = _from_json(name, datatype, shape, item["data"], model_name, prefix)
        request.inputs[name] = Tensor(name, datatype, shape, data)
    return offset


def _invalid_datatype(name: str, model_name: str, prefix: str, config: Any) -> TritonError:
    """A binary (or empty) input with an unknown datatype: Triton's core rejects it."""
    for spec in config.input:
        if spec.name == name:
            return TritonError.invalid_arg(
                f"{prefix}inference input '{name}' data-type is '<invalid>', but model "
                f"'{model_name}' expects '{wire_datatype(spec.data_type)}'"
            )
    return TritonError.invalid_arg(f"invalid datatype for input {name}")


def _check_content_fields(item: dict[str, Any], params: dict[str, Any]) -> None:
    has_data = "data" in item
    has_binary = "binary_data_size" in params
    has_shm = "shared_memory_region" in params
    if has_data + has_binary + has_shm == 1:
        return
    message = (
        "Input must set only one of the following fields: 'data', 'binary_data_size' in "
        "'parameters', 'shared_memory_region' in 'parameters'. But"
    )
    if not (has_data or has_binary or has_shm):
        message += " no field is set"
    else:
        message += " set"
        if has_data:
            message += " 'data'"
        if has_binary:
            message += " 'binary_data_size'"
        if has_shm:
            message += " 'shared_memory_region'"
    raise TritonError.invalid_arg(message)


def _member_string(item: dict[str, Any], member: str) -> str:
    if member not in item:
        raise _bad(member, _missing(member))
    value = item[member]
    if type(value) is not str:
        raise _bad(member, _NOT_STRING)
    return value


def _shape(item: dict[str, Any]) -> tuple[int, ...]:
    if "shape" not in item:
        raise _bad("shape", _missing("shape"))
    shape = item["shape"]
    if type(shape) is not list:
        raise _bad("shape", _NOT_ARRAY)
    for dim in shape:
        if type(dim) is not int or dim < 0 or dim > _INT64_MAX:
            raise _bad("shape", _NOT_UINT)
    return tuple(shape)


def _element_count(shape: tuple[int, ...]) -> int:
    count = 1
    for dim in shape:
        count *= dim
    return count


def _empty(datatype: str, shape: tuple[int, ...]) -> np.ndarray:
    try:
        return np.empty(shape, dtype=numpy_dtype(datatype))
    except (ValueError, MemoryError):
        raise TritonError.invalid_arg(f"invalid shape {list(shape)} for input") from None


def _from_binary(
    name: str,
    datatype: str,
    shape: tuple[int, ...],
    data: memoryview,
    model_name: str,
    prefix: str,
) -> np.ndarray:
    count = _element_count(shape)
    if datatype == "BYTES":
        return _parse_bytes(data, count, name, model_name, prefix).reshape(shape)
    dtype = numpy_dtype(datatype)
    expected = count * dtype.itemsize
    if len(data) != expected:
        raise TritonError.invalid_arg(
            f"{prefix}input byte size mismatch for input '{name}' for model '{model_name}'. "
            f"Expected {expected}, got {len(data)}"
        )
    if count == 0:
        return _empty(datatype, shape)
    return np.frombuffer(data, dtype=dtype).reshape(shape)


def _parse_bytes(
    data: memoryview, count: int, name: str, model_name: str, prefix: str
) -> np.ndarray:
    """Length-prefixed BYTES elements, validated the way Triton's core validates them."""
    items: list[bytes] = []
    offset, size = 0, len(data)
    unpack = _U32.unpack_from
    while size - offset >= 4:
        if len(items) >= count:
            raise TritonError.invalid_arg(
                f"{prefix}unexpected number of string elements {len(items) + 1} for inference "
                f"input '{name}' for model '{model_name}', expecting {count}"
            )
        (length,) = unpack(data, offset)
        offset += 4
        if length > size - offset:
            # Triton's core counts the truncated element; with the right count the backend
            # then finds the data short.
            if len(items) + 1 != count:
                raise TritonError.invalid_arg(
                    f"{prefix}expected {count} string elements for inference input '{name}' "
                    f"for model '{model_name}', got {len(items) + 1}"
                )
            raise TritonError.invalid_arg(
                f"incomplete string data for inference input '{name}', expecting string of "
                f"length {length} but only {size - offset} bytes available"
            )
        items.append(bytes(data[offset : offset + length]))
        offset += length
    if offset != size:
        raise TritonError.invalid_arg(
            f"{prefix}incomplete string length indicator for inference input '{name}' for "
            f"model '{model_name}', expecting 4 bytes but only {size - offset} bytes "
            "available. Please make sure the string length indicator is in one buffer."
        )
    if len(items) != count:
        raise TritonError.invalid_arg(
            f"{prefix}expected {count} string elements for inference input '{name}' for "
            f"model '{model_name}', got {len(items)}"
        )
    out = np.empty(len(items), dtype=np.object_)
    out[:] = items
    return out


def _from_json(
    name: str,
    datatype: str,
    shape: tuple[int, ...],
    data: Any,
    model_name: str,
    prefix: str,
) -> np.ndarray:
    count = _element_count(shape)
    if count == 0:
        return _empty(datatype, shape)
    if type(data) is not list:
        raise _bad("data", _NOT_ARRAY)
    if datatype == "FP16" or datatype == "BF16":
        raise TritonError.invalid_arg(
            f"receiving {datatype} data via JSON is not supported. Please use the binary data "
            f"format for input {name}"
        )
    family = _FAMILY.get(datatype)
    if family is None:
        raise TritonError.invalid_arg(f"invalid datatype for input {name}")

    flat, types = _leaves(data)
    if not types <= _ALLOWED_TYPES[family]:
        if family == "bytes":
            raise TritonError.invalid_arg(f"Unable to parse JSON bytes array: {_NOT_STRING}")
        raise _bad("data", _NOT_A[family])

    if family == "bytes":
        if len(flat) > count:
            raise TritonError.invalid_arg(
                f"{prefix}unexpected number of string elements {count + 1} for inference "
                f"input '{name}' for model '{model_name}', expecting {count}"
            )
        if len(flat) < count:
            raise TritonError.invalid_arg(
                f"{prefix}expected {count} string elements for inference input '{name}' for "
                f"model '{model_name}', got {len(flat)}"
            )
        out = np.empty(count, dtype=np.object_)
        out[:] = [utf8(s) for s in flat]
        return out.reshape(shape)

    if len(flat) != count:
        raise TritonError.invalid_arg(_SHAPE_MISMATCH)
    target = numpy_dtype(datatype)
    try:
        if family == "float":
            # Through double, as Triton reads every JSON number (then narrows to float).
            array = np.array(flat, dtype=np.float64)
            if target != array.dtype:
                with np.errstate(over="ignore"):
                    array = array.astype(target)
        elif family == "int":
            array = np.array(flat, dtype=np.int64)
            if target != array.dtype:
                array = array.astype(target)  # wraps like Triton's C cast
        elif family == "uint":
            array = np.array(flat, dtype=np.uint64)
            if target != array.dtype:
                array = array.astype(target)
        else:
            array = np.array(flat, dtype=np.bool_)
    except OverflowError:
        raise _bad("data", _NOT_A[family]) from None
    return array.reshape(shape)


def _leaves(data: list[Any]) -> tuple[list[Any], set[type]]:
    """Flatten nested JSON lists (any nesting, as Triton accepts) and the leaves' types."""
    flat = data
    while True:
        types = set(map(type, flat))
        if list not in types:
            return flat, types
        flat = list(chain.from_iterable(x if type(x) is list else (x,) for x in flat))


def _decode_outputs(outputs: Any, request: InferenceRequest, plan: OutputPlan) -> None:
    if type(outputs) is not list:
        raise _bad("outputs", _NOT_ARRAY)
    for item in outputs:
        if not isinstance(item, dict):
            item = {}
        params = item.get("parameters")
        if not isinstance(params, dict):
            params = {}
        if "shared_memory_region" in params:
            if "classification" in params:
                raise TritonError.invalid_arg(
                    "Output can't set both 'shared_memory_region' and 'classification'"
                )
            if params.get("binary_data") is True:
                raise TritonError.invalid_arg(
                    "Output can't set both 'shared_memory_region' and 'binary_data'"
                )
        name = _member_string(item, "name")
        classes = params.get("classification", 0)
        if not _is_uint(classes):
            raise TritonError.invalid_arg(
                f"Unable to set 'classification': {_NOT_UINT}"
            )
        if "shared_memory_region" in params:
            region = params["shared_memory_region"]
            if type(region) is not str:
                raise _bad("shared_memory_region", _NOT_STRING)
            raise TritonError.not_found(f"Unable to find shared memory region: '{region}'")
        binary = params.get("binary_data", False)
        if type(binary) is not bool:
            raise _bad("binary_data", _NOT_BOOL)
        if name not in plan.requested:
            request.requested_outputs.append(RequestedOutput(name, dict(params)))
        plan.requested[name] = (binary, classes)


def _decode_raw(
    model_name: str, model_version: int, body: bytes, config: Any
) -> tuple[InferenceRequest, OutputPlan]:
    """A body that is one input's raw bytes (Inference-Header-Content-Length: 0)."""
    prefix = "[request id: <id_unknown>] "
    if len(config.input) != 1:
        raise TritonError.invalid_arg(
            f"{prefix}Raw request must only have 1 input (found 1) to be deduced but got "
            f"{len(config.input)} inputs in '{model_name}' model configuration"
        )
    spec = config.input[0]
    datatype = wire_datatype(spec.data_type)
    shape: list[int] = [1] if config.max_batch_size > 0 else []
    dynamic_axis = -1
    fixed = 1
    for dim in spec.dims:
        if dim == -1:
            if dynamic_axis != -1:
                raise TritonError.invalid_arg(
                    f"{prefix}The shape of the raw input '{spec.name}' can not be deduced "
                    "because there are more than one variable-sized dimension"
                )
            dynamic_axis = len(shape)
        else:
            fixed *= dim
        shape.append(dim)
    request = InferenceRequest(model_name, model_version)
    if datatype == "BYTES":
        if dynamic_axis != -1 or fixed != 1:
            raise TritonError.invalid_arg(
                f"{prefix}For BYTE datatype raw input '{spec.name}', the model must have "
                "input shape [1]"
            )
        data = np.empty(1, dtype=np.object_)
        data[0] = body
        data = data.reshape(shape)
    else:
        itemsize = numpy_dtype(datatype).itemsize
        if dynamic_axis != -1:
            shape[dynamic_axis] = len(body) // fixed // itemsize if fixed else 0
        expected = _element_count(tuple(shape)) * itemsize
        if len(body) != expected:
            raise TritonError.invalid_arg(
                f"{prefix}input byte size mismatch for input 'raw_input' for model "
                f"'{model_name}'. Expected {expected}, got {len(body)}"
            )
        data = np.frombuffer(body, dtype=numpy_dtype(datatype)).reshape(shape)
    request.inputs[spec.name] = Tensor(spec.name, datatype, tuple(shape), data)
    return request, OutputPlan(default_binary=True)


# -- response --------------------------------------------------------------------------------


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
    requested = plan.requested
    for tensor in response.outputs:
        if requested:
            choice = requested.get(tensor.name)
            if choice is None:
                continue
            binary, classes = choice
        else:
            binary, classes = plan.default_binary, 0
        datatype, shape, array = tensor.datatype, list(tensor.shape), tensor.data
        if classes > 0:
            datatype, shape, array = _classify(tensor, classes, config)
        entry: dict[str, Any] = {"name": tensor.name, "datatype": datatype, "shape": shape}
        if binary:
            raw = _raw_bytes(datatype, array)
            entry["parameters"] = {"binary_data_size": len(raw)}
            if len(raw):
                blobs.append(raw)
        else:
            entry["data"] = _json_data(tensor.name, datatype, array)
        outputs_json.append(entry)

    document: dict[str, Any] = {}
    if response.id:
        document["id"] = response.id
    document["model_name"] = response.model_name or request.model_name
    document["model_version"] = str(response.model_version)
    if response.parameters:
        document["parameters"] = response.parameters
    document["outputs"] = outputs_json
    return utf8(_ENCODER.encode(document)), blobs


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
    return memoryview(array).cast("B")


def _json_data(name: str, datatype: str, array: np.ndarray) -> list[Any]:
    if datatype == "FP16" or datatype == "BF16":
        raise TritonError.invalid_arg(
            f"sending {datatype} data via JSON is not supported. Please use the binary data "
            "format for output"
        )
    array = np.asarray(array).reshape(-1)
    if datatype == "BYTES":
        return [
            item.decode("utf-8", "surrogateescape")
            if isinstance(item, (bytes, bytearray))
            else (bytes(item).decode("utf-8", "surrogateescape")
                  if isinstance(item, memoryview) else str(item))
            for item in array.tolist()
        ]
    dtype = numpy_dtype(datatype)
    if array.dtype != dtype:
        array = array.astype(dtype)
    return array.tolist()


def _classify(tensor: Tensor, classes: int, config: Any) -> tuple[str, list[int], np.ndarray]:
    """Triton's classification extension: the top `classes` "value:index" strings per batch."""
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


def accepted_encoding(accept_encoding: str) -> str:
    """Triton's choice among identity/gzip/deflate from an Accept-Encoding header."""
    chosen, weight = "identity", 0.0
    for part in accept_encoding.split(","):
        start = len(part) - len(part.lstrip(" "))
        if start == len(part):
            continue
        weight_pos = part.find(";q=")
        if weight_pos != -1 and start >= weight_pos:
            continue
        kind = part[start:] if weight_pos == -1 else part[start:weight_pos]
        kind_weight = 1.0
        if weight_pos != -1:
            try:
                kind_weight = float(part[weight_pos + 3 :])
            except ValueError:
                continue
        if kind in ("identity", "deflate", "gzip") and kind_weight > weight:
            chosen, weight = kind, kind_weight
    return chosen


def compress(data: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        compressor = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)
    else:
        compressor = zlib.compressobj()
    return compressor.compress(data) + compressor.flush()
