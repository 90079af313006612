"""ModelInferRequest bytes -> InferenceRequest, with Triton's checks (src/grpc/infer_handler.cc
and the core's input validation) and messages. ModelStreamInfer reuses it. The answers' side is
`infer_response`; the parameters' checks are `infer_parameters`, and a message decoded before is
decoded from its template (`request_template`).

Speed: the big parts of ModelInfer messages never go through protobuf objects. Large requests are
scanned by hand so each `raw_input_contents` entry becomes a zero-copy view of the received
message (`np.frombuffer` on it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from tritonclient.grpc import service_pb2 as pb

from ...datatypes import NUMPY_DTYPES
from ...errors import TritonError
from ...request import (
    InferenceRequest,
    RequestedOutput,
    apply_parameters,
    log_prefix,
    parse_version,
)
from ...tensor import (
    BYTE_SIZE_MISMATCH,
    DATATYPES,
    STRING_COUNT_MISMATCH,
    HeldDataError,
    Tensor,
    dims_string,
    element_count,
    empty_input,
    input_data_error,
    input_from_wire,
)
from ..extensions.limits import check_requested_outputs
from ..extensions.shared_memory import (
    OutputRegion,
    SharedMemoryManager,
    end_region_use,
    output_query,
)
from .infer_parameters import (
    SHM_PARAMETERS,
    checked_request_parameters,
    plain_parameters,
    tensor_region,
)
from .protowire import SCAN_THRESHOLD, read_varint
from .request_template import BY_SIZE, TEMPLATES, keep_template, template_key

# -- ModelInferRequest: parsing -----------------------------------------------------------------

# The message, its raw_input_contents, and its bytes before them (the key to its template).
ParsedInferRequest = tuple[pb.ModelInferRequest, Sequence["bytes | memoryview"], "bytes | None"]


def parse_infer_request(data: bytes) -> ParsedInferRequest:
    """Wire bytes -> (message, raw_input_contents, template key: see `template_key`).

    Big messages are scanned field by field: raw_input_contents (field 7) entries become
    memoryviews of `data` (no copy) and only the rest goes through protobuf. A message that is
    a kept template's fields followed by raw contents of the sizes the template was made with
    is not parsed at all: its message is the template's.
    """
    template = BY_SIZE.get(len(data))
    if template is not None:
        kept = template.raws(data)
        if kept is not None:
            return template.message, kept, template.key
    message, raws = _parse(data)
    return message, raws, template_key(data, raws)


def _parse(data: bytes) -> tuple[pb.ModelInferRequest, Sequence[bytes | memoryview]]:
    if len(data) < SCAN_THRESHOLD:
        message = pb.ModelInferRequest.FromString(data)
        # Slices, not iteration: protobuf's repeated fields iterate by index until an
        # IndexError (its message formatted, then dropped), at three times the cost.
        return message, message.raw_input_contents[:]
    view = memoryview(data)
    rest: list[memoryview] = []
    raws: list[memoryview] = []
    pos, end = 0, len(data)
    while pos < end:
        start = pos
        tag, pos = read_varint(data, pos)
        wire_type = tag & 7
        if wire_type == 2:
            length, pos = read_varint(data, pos)
            stop = pos + length
            if stop > end:
                raise ValueError("truncated ModelInferRequest")
            if tag >> 3 == 7:
                raws.append(view[pos:stop])
            else:
                rest.append(view[start:stop])
            pos = stop
        elif wire_type == 0:
            _, pos = read_varint(data, pos)
            rest.append(view[start:pos])
        elif wire_type == 1 or wire_type == 5:
            pos += 8 if wire_type == 1 else 4
            if pos > end:
                raise ValueError("truncated ModelInferRequest")
            rest.append(view[start:pos])
        else:
            raise ValueError(f"unsupported protobuf wire type {wire_type} in ModelInferRequest")
    return pb.ModelInferRequest.FromString(b"".join(rest)), raws

# -- ModelInferRequest: decoding ----------------------------------------------------------------


def decode_infer_request(
    message: pb.ModelInferRequest,
    raws: Sequence[bytes | memoryview],
    regions: SharedMemoryManager,
    key: bytes | None = None,
) -> tuple[InferenceRequest, dict[str, OutputRegion] | None]:
    """ModelInferRequest -> InferenceRequest, with Triton's checks and messages, and the
    outputs to write into client shared memory (`regions` are the registered ones). With the
    message's template `key`, a message decoded before is decoded from its template."""
    if key is not None:
        template = TEMPLATES.get(key)
        if template is not None and len(raws) == len(template.inputs):
            return template.request(raws), None
    request = InferenceRequest(message.model_name, parse_version(message.model_version),
                               id=message.id)
    try:
        return _decode(message, raws, regions, key, request)
    except BaseException:
        end_region_use(request)  # a request that failed to decode uses no region
        raise


def _decode(
    message: pb.ModelInferRequest,
    raws: Sequence[bytes | memoryview],
    regions: SharedMemoryManager,
    key: bytes | None,
    request: InferenceRequest,
) -> tuple[InferenceRequest, dict[str, OutputRegion] | None]:
    model = message.model_name
    rid = message.id
    request_parameters: dict[str, Any] = {}
    if message.parameters:
        request_parameters = checked_request_parameters(message.parameters)
        apply_parameters(request, request_parameters)

    prefix = log_prefix(rid)
    inputs: dict[str, Tensor] = request.inputs
    raw_count = len(raws)
    raw_index = 0
    all_raw = True
    held = HeldDataError()
    for io in message.inputs[:]:
        name = io.name
        if name in inputs:
            raise TritonError.invalid_arg(f"{prefix}input '{name}' already exists in request")
        parameters = plain_parameters(io.parameters) if io.parameters else {}
        view = None
        if parameters and SHM_PARAMETERS.intersection(parameters):
            window = tensor_region(io.parameters, name, regions)
            request.region_windows += (window,)
            view = window.read()
        datatype = io.datatype
        dtype = NUMPY_DTYPES.get(datatype)
        if dtype is None:
            raise TritonError.invalid_arg(
                f"{prefix}invalid datatype '{datatype}' for input '{name}' of model "
                f"'{model}'; expected one of {', '.join(sorted(DATATYPES))}"
            )
        shape = tuple(io.shape[:])
        for dim in shape:
            if dim < 0:
                raise TritonError.invalid_arg(
                    f"{prefix}invalid shape {dims_string(shape)} for input '{name}' of model "
                    f"'{model}': dimensions must be >= 0"
                )
        if view is not None:
            if io.HasField("contents"):
                raise TritonError.invalid_arg(
                    f"unexpected 'content' provided when using shared memory for input tensor "
                    f"'{name}' for model '{model}'"
                )
            data = held.convert(input_from_wire, view, datatype, shape, name, model, prefix)
            # Triton lets a shared-memory input leave its raw_input_contents slot unused.
            raw_index += raw_index < raw_count
            all_raw = False
        elif io.HasField("contents"):
            if raw_count:
                raise TritonError.invalid_arg(
                    f"contents field must not be specified when using raw_input_contents for "
                    f"'{name}' for model '{model}'"
                )
            data = held.convert(_contents_array, io, datatype, dtype, shape, model, prefix)
            all_raw = False
        elif raw_index < raw_count:
            data = held.convert(input_from_wire, raws[raw_index], datatype, shape, name, model,
                                prefix)
            raw_index += 1
        else:
            raise TritonError.invalid_arg(
                f"unable to find data for input tensor '{name}' for model '{model}' in request."
            )
        if data is not None:
            inputs[name] = Tensor(name, datatype, shape, data, parameters)
    if raw_index != raw_count:
        raise TritonError.invalid_arg(
            f"{prefix}{raw_count} raw_input_contents given for {len(message.inputs)} "
            f"inputs of model '{model}': raw_input_contents must hold one entry per input, in "
            "the order of 'inputs'"
        )
    held.check()

    check_requested_outputs(len(message.outputs), model)
    targets: dict[str, OutputRegion] | None = None
    for out in message.outputs[:]:
        out_parameters = plain_parameters(out.parameters) if out.parameters else {}
        if out_parameters and "classification" in out_parameters:
            if "shared_memory_region" in out_parameters:
                raise TritonError.invalid_arg(
                    "output can't set both 'shared_memory_region' and 'classification'"
                )
            # Triton's words, including "expected >= 0" for a count it refuses below 1.
            if out.parameters["classification"].WhichOneof("parameter_choice") != "int64_param":
                raise TritonError.invalid_arg(
                    "invalid value type for 'classification' parameter, expected int64_param"
                )
            if out_parameters["classification"] < 1:
                raise TritonError.invalid_arg(
                    "invalid value for 'classification' parameter, expected >= 0"
                )
        if out_parameters and SHM_PARAMETERS.intersection(out_parameters):
            if targets is None:
                targets = {}
            targets[out.name] = window = tensor_region(out.parameters, out.name, regions)
            request.region_windows += (window,)
        request.requested_outputs.append(RequestedOutput(out.name, out_parameters))
    if targets is not None:
        request.output_query = output_query(targets)
    if key is not None and all_raw and targets is None and not rid:
        keep_template(key, raws, request, request_parameters)
    return request, targets


# InferTensorContents field -> (the datatype it carries, datatypes it may fill). int_contents
# also carries INT8/INT16 and uint_contents UINT8/UINT16 (each element's low bytes), as Triton.
_CONTENTS: list[tuple[str, str, tuple[str, ...]]] = [
    ("bool_contents", "BOOL", ("BOOL",)),
    ("int_contents", "INT32", ("INT8", "INT16", "INT32")),
    ("int64_contents", "INT64", ("INT64",)),
    ("uint_contents", "UINT32", ("UINT8", "UINT16", "UINT32")),
    ("uint64_contents", "UINT64", ("UINT64",)),
    ("fp32_contents", "FP32", ("FP32",)),
    ("fp64_contents", "FP64", ("FP64",)),
    ("bytes_contents", "BYTES", ("BYTES",)),
]


def _contents_array(
    io: Any, datatype: str, dtype: np.dtype, shape: tuple[int, ...], model: str, prefix: str
) -> np.ndarray:
    """Typed `contents` -> array, with Triton's checks (one kind only, of the right type)."""
    name = io.name
    contents = io.contents
    data: np.ndarray | None = None
    for field, carried, fills in _CONTENTS:
        values = getattr(contents, field)
        if not values:
            continue
        if data is not None:
            raise TritonError.invalid_arg(
                f"unexpected explicit tensor data for input tensor '{name}' for model "
                f"'{model}', binary data was already supplied."
            )
        if datatype not in fills:
            raise TritonError.invalid_arg(
                f"unexpected explicit tensor data for input tensor '{name}' for model "
                f"'{model}' of type '{carried}', expected datatype '{datatype}'"
            )
        if datatype == "BYTES":
            data = np.empty(len(values), dtype=np.object_)
            data[:] = list(values)
        elif carried == datatype:
            data = np.array(values, dtype=dtype)
        else:  # INT8/INT16/UINT8/UINT16 from 32-bit elements: keep the low bytes
            data = np.array(values, dtype=NUMPY_DTYPES[carried]).astype(dtype)
    count = element_count(shape)
    got = 0 if data is None else len(data)
    if got != count:
        if datatype == "BYTES":
            raise input_data_error(STRING_COUNT_MISMATCH, name, model, count, got, prefix)
        size = dtype.itemsize
        raise input_data_error(BYTE_SIZE_MISMATCH, name, model, count * size, got * size, prefix)
    if data is None:
        return empty_input(datatype, shape)
    return data.reshape(shape)
