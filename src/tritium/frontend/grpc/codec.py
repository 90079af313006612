"""ModelInferRequest bytes -> InferenceRequest, with Triton's checks (src/grpc/infer_handler.cc
and the core's input validation) and messages. ModelStreamInfer reuses it. The answers' side is
`infer_response`.

Speed: the big parts of ModelInfer messages never go through protobuf objects. Large requests are
scanned by hand so each `raw_input_contents` entry becomes a zero-copy view of the received
message (`np.frombuffer` on it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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
    WireInput,
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
    Window,
    end_region_use,
    output_query,
    region_window,
)
from .protowire import read_varint, varint

# Requests at least this big are scanned by hand so raw tensors stay views of the message; below
# it protobuf's C parser is faster than the Python scan and the copies are negligible.
_SCAN_THRESHOLD = 48 * 1024

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
    template = _BY_SIZE.get(len(data))
    if template is not None:
        kept = template.raws(data)
        if kept is not None:
            return template.message, kept, template.key
    message, raws = _parse(data)
    return message, raws, template_key(data, raws)


def _parse(data: bytes) -> tuple[pb.ModelInferRequest, Sequence[bytes | memoryview]]:
    if len(data) < _SCAN_THRESHOLD:
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
        template = _TEMPLATES.get(key)
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
        request_parameters = _request_parameters(message.parameters)
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
        parameters = _plain(io.parameters) if io.parameters else {}
        view = None
        if parameters and _SHM_PARAMETERS.intersection(parameters):
            window = _tensor_region(io.parameters, name, regions)
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
        out_parameters = _plain(out.parameters) if out.parameters else {}
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
        if out_parameters and _SHM_PARAMETERS.intersection(out_parameters):
            if targets is None:
                targets = {}
            targets[out.name] = window = _tensor_region(out.parameters, out.name, regions)
            request.region_windows += (window,)
        request.requested_outputs.append(RequestedOutput(out.name, out_parameters))
    if targets is not None:
        request.output_query = output_query(targets)
    if key is not None and all_raw and targets is None and not rid:
        _keep_template(key, raws, request, request_parameters)
    return request, targets


# -- ModelInferRequest: templates ----------------------------------------------------------------

# Decoded requests by the message's bytes before its raw_input_contents: clients send the same
# fields with every request of a kind, and the same fields decode to the same request but for
# its tensors' bytes (as HTTP's header templates, http/request.py). Kept for messages whose
# inputs are all raw contents, that name no shared memory and carry no id. Bounded.
_TEMPLATE_LIMIT = 256
_TEMPLATE_KEY_LIMIT = 4096
_RAW_INPUT_TAG = b"\x3a"  # field 7 (raw_input_contents), wire type 2


def template_key(data: bytes, raws: Sequence[bytes | memoryview]) -> bytes | None:
    """`data` before its raw_input_contents when those are its last fields, each whole and in
    order (protobuf writes a message's fields in number order, raw_input_contents last); None
    for any other layout and for long keys."""
    end = len(data)
    for raw in reversed(raws):
        size = len(raw)
        head = _RAW_INPUT_TAG + varint(size)
        end -= len(head) + size
        if end < 0 or data[end : end + len(head)] != head:
            return None
    return bytes(data[:end]) if end <= _TEMPLATE_KEY_LIMIT else None


def _key_message(key: bytes) -> pb.ModelInferRequest | None:
    """`key` parsed, if it is whole fields holding no raw contents: then it ends where the
    message's raw_input_contents begin (its parse follows the message's own up to there), and
    every message starting with it and ending in raw contents only has the fields it has.
    Checked once, before a template is kept: without it, a message whose raw contents merely
    look like that layout could keep its own fields under another client's key."""
    try:
        message = pb.ModelInferRequest.FromString(key)
    except Exception:  # not whole fields (protobuf's DecodeError)
        return None
    return None if message.raw_input_contents else message


def _keep_template(key: bytes, raws: Sequence[bytes | memoryview], request: InferenceRequest,
                   parameters: dict[str, Any]) -> None:
    message = _key_message(key)
    if message is None:
        return
    if len(_TEMPLATES) >= _TEMPLATE_LIMIT:
        _TEMPLATES.clear()
        _BY_SIZE.clear()
    layout = []
    at = len(key)
    for raw in raws:
        head = _RAW_INPUT_TAG + varint(len(raw))
        start = at + len(head)
        layout.append((at, head, start, start + len(raw)))
        at = start + len(raw)
    template = _Template(key, message, tuple(layout), request.model_name, request.model_version,
                         dict(parameters),
                         tuple((WireInput(t.name, t.datatype, t.shape), dict(t.parameters))
                               for t in request.inputs.values()),
                         tuple((o.name, dict(o.parameters)) for o in request.requested_outputs))
    _TEMPLATES[key] = template
    # One template per message size (the last kept): the size picks the template to try
    # before parsing.
    _BY_SIZE[at] = template


@dataclass(frozen=True, slots=True, eq=False)
class _Template:
    """What a message decodes to, less its tensors' bytes; the `form` of its requests (compared
    by identity). `layout`: where each raw_input_contents entry's field head (tag and length)
    and bytes were in the message it was made from."""

    key: bytes
    message: pb.ModelInferRequest  # the key's fields; read, never changed
    layout: tuple[tuple[int, bytes, int, int], ...]  # head at, head, bytes start, bytes stop
    model: str
    version: int
    parameters: dict[str, Any]  # as apply_parameters takes them
    inputs: tuple[tuple[WireInput, dict[str, Any]], ...]
    outputs: tuple[tuple[str, dict[str, Any]], ...]

    def raws(self, data: bytes) -> list[bytes | memoryview] | None:
        """The raw contents of `data` if it is this template's fields followed by raw contents
        laid out as those it was made from (None otherwise: it is parsed)."""
        if not data.startswith(self.key):
            return None
        source: bytes | memoryview = memoryview(data) if len(data) >= _SCAN_THRESHOLD else data
        raws: list[bytes | memoryview] = []
        for at, head, start, stop in self.layout:
            if data[at:start] != head:
                return None
            raws.append(source[start:stop])
        return raws

    def request(self, raws: Sequence[bytes | memoryview]) -> InferenceRequest:
        """A request of this template, its tensors from `raws` (each conversion checked)."""
        request = InferenceRequest(self.model, self.version)
        request.form = self
        if self.parameters:
            apply_parameters(request, self.parameters)
        model = self.model
        prefix = log_prefix("")
        inputs = request.inputs
        held = HeldDataError()
        for (wire, parameters), raw in zip(self.inputs, raws, strict=True):
            data = held.convert(wire.array, raw, model, prefix)
            if data is not None:
                inputs[wire.name] = Tensor(wire.name, wire.datatype, wire.shape, data,
                                           dict(parameters))
        held.check()
        requested = request.requested_outputs
        for name, parameters in self.outputs:
            requested.append(RequestedOutput(name, dict(parameters)))
        return request


_TEMPLATES: dict[bytes, _Template] = {}
_BY_SIZE: dict[int, _Template] = {}


_SHM_PARAMETERS = frozenset(("shared_memory_region", "shared_memory_offset",
                             "shared_memory_byte_size"))


def _tensor_region(params: Any, name: str, regions: SharedMemoryManager) -> Window:
    """The window a tensor's shared-memory parameters name, checked as Triton's gRPC frontend
    checks them (kinds, a size with every region, no offset or size without one)."""
    values: dict[str, Any] = {}
    for key, kind in (("shared_memory_region", "string_param"),
                      ("shared_memory_offset", "int64_param"),
                      ("shared_memory_byte_size", "int64_param")):
        if key in params:
            if params[key].WhichOneof("parameter_choice") != kind:
                raise TritonError.invalid_arg(
                    f"invalid value type for '{key}' parameter for tensor '{name}', expected "
                    f"{kind}."
                )
            values[key] = getattr(params[key], kind)
    region = values.get("shared_memory_region")
    if region is None:
        extra = "shared_memory_byte_size" if "shared_memory_byte_size" in values \
            else "shared_memory_offset"
        raise TritonError.invalid_arg(
            f"'{extra}' can not be specified without 'shared_memory_region' parameter for "
            f"tensor '{name}'"
        )
    if "shared_memory_byte_size" not in values:
        raise TritonError.invalid_arg(
            "'shared_memory_byte_size' must be specified along with 'shared_memory_region' "
            f"parameter for tensor '{name}'"
        )
    return region_window(regions, region, values.get("shared_memory_offset", 0),
                       values["shared_memory_byte_size"])


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


# The request parameters Triton's gRPC frontend reads itself: the InferParameter kinds it accepts
# for each, and how its error message names them. Any other key is the model's (_MODEL_KINDS).
_READ_KINDS: dict[str, tuple[frozenset[str], str]] = {
    "sequence_id": (frozenset(("int64_param", "string_param")), "int64_param or string_param"),
    "sequence_start": (frozenset(("bool_param",)), "bool_param"),
    "sequence_end": (frozenset(("bool_param",)), "bool_param"),
    "priority": (frozenset(("int64_param", "uint64_param")), "int64_param or uint64_param"),
    "timeout": (frozenset(("int64_param",)), "int64_param"),
    # The one reserved key a client may send: a ModelStreamInfer option, not for the model.
    "triton_enable_empty_final_response": (frozenset(("bool_param",)), "bool_param"),
}
_STREAM_OPTION = "triton_enable_empty_final_response"
# Triton 2.51 takes double_param too (its message does not say so), but not uint64_param.
_MODEL_KINDS = (
    frozenset(("int64_param", "bool_param", "string_param", "double_param")),
    "int64_param, bool_param, or string_param",
)


def _request_parameters(params: Any) -> dict[str, Any]:
    """Request parameters checked against their InferParameter kinds, as Triton's gRPC frontend
    checks them, as plain values for `apply_parameters`."""
    values: dict[str, Any] = {}
    for key, param in params.items():
        rule = _READ_KINDS.get(key)
        if rule is None:
            if key.startswith("triton_"):
                raise TritonError.invalid_arg(
                    "parameter keys starting with 'triton_' are reserved for Triton usage. "
                    "Only the following keys starting with 'triton_' are allowed: "
                    f"{_STREAM_OPTION}"
                )
            rule = _MODEL_KINDS
        kinds, expected = rule
        kind = param.WhichOneof("parameter_choice")
        if kind not in kinds:
            raise TritonError.invalid_arg(
                f"invalid value type for '{key}' parameter, expected {expected}."
            )
        value = getattr(param, kind)
        if key == "sequence_id" and kind == "int64_param":
            value &= 0xFFFF_FFFF_FFFF_FFFF  # Triton keeps integer sequence ids as uint64
        elif key == "priority" and value < 0:
            raise TritonError.invalid_arg("invalid value for 'priority', expected value >= 0.")
        if key != _STREAM_OPTION:
            values[key] = value
    return values


def _plain(params: Any) -> dict[str, Any]:
    """Input and output parameters as plain values (Triton does not check their kinds)."""
    out: dict[str, Any] = {}
    for key, param in params.items():
        kind = param.WhichOneof("parameter_choice")
        if kind is not None:
            out[key] = getattr(param, kind)
    return out


def enable_empty_final_response(message: pb.ModelInferRequest) -> bool:
    """The request's `triton_enable_empty_final_response` (its kind was checked by decoding)."""
    param = message.parameters.get(_STREAM_OPTION)
    return param is not None and param.bool_param
