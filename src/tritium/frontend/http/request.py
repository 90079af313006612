"""The KServe-v2 HTTP infer request body: JSON plus Triton's binary tensor extension.

A request body is a JSON header, optionally followed by raw tensor bytes
(`Inference-Header-Content-Length` tells where the JSON ends; inputs with a `binary_data_size`
parameter take their bytes from the tail, in order). `Inference-Header-Content-Length: 0` makes
the whole body the raw data of a model's single input.

Messages follow Triton's http_server.cc wording so clients see the same text. Tensors are built
without copying the body: `np.frombuffer` on slices of the received bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...errors import TritonError
from ...raw_input import raw_input_tensor
from ...request import InferenceRequest, RequestedOutput, apply_parameters, log_prefix
from ...tensor import (
    DATATYPES,
    HeldDataError,
    Tensor,
    WireInput,
    element_count,
    input_from_wire,
    wire_datatype,
)
from ..extensions.json_codec import (
    NOT_ARRAY,
    NOT_BOOL,
    NOT_STRING,
    NOT_UINT,
    is_bool,
    is_uint,
    missing,
    parse_error,
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
from .json_data import array_from_json
from .json_spans import load_request_json

_INT64_MAX = (1 << 63) - 1


@dataclass(slots=True)
class OutputPlan:
    """How the response is to be encoded, as the request asked."""

    default_binary: bool = False
    # Explicitly requested outputs: name -> (binary, classification count).
    requested: dict[str, tuple[bool, int]] = field(default_factory=dict)
    # Outputs to write into client shared memory instead of the body, by name.
    regions: dict[str, OutputRegion] | None = None
    # Whether any output asks for classification, and then the model's labels (by output).
    classifies: bool = False
    labels: dict[str, list[str]] | None = None


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


def decode_infer_request(
    model_name: str,
    model_version: int,
    body: bytes,
    header_length: int,
    config: Any,
    regions: SharedMemoryManager,
) -> tuple[InferenceRequest, OutputPlan]:
    """Decode an infer body into an InferenceRequest (raises TritonError with Triton's text).

    `config` is the model's ModelConfig: a raw request (no JSON) takes its input's name,
    datatype and shape from it, and it names the expected datatype in datatype errors.
    `regions` are the client shared-memory regions that tensors may name.
    """
    if header_length == 0:
        return _decode_raw(model_name, model_version, body, config)

    header = body[:header_length] if header_length != len(body) else body
    # (A header too long to be kept is not hashed: JSON data can make it megabytes.)
    key = (header, len(body)) if len(header) <= _TEMPLATE_HEADER_LIMIT else None
    template = _TEMPLATES.get(key) if key is not None else None
    if template is not None:
        return template.request(model_name, model_version, memoryview(body), header_length)
    document = load_request_json(header)
    if not isinstance(document, dict):
        raise parse_error("inputs", missing("inputs"))
    request = InferenceRequest(model_name, model_version)
    plan = OutputPlan()
    parameters: dict[str, Any] = {}
    # Same order as Triton: id, parameters, inputs (+ binary data), outputs.
    if "id" in document:
        request_id = document["id"]
        if type(request_id) is not str:
            raise parse_error("id", NOT_STRING)
        request.id = request_id
    if "parameters" in document:
        parameters = _request_parameters(document["parameters"], plan)
        apply_parameters(request, parameters)
    prefix = log_prefix(request.id)
    view = memoryview(body)
    try:
        offset, sizes = _decode_inputs(document, request, view, header_length, config, prefix,
                                       regions)
        if offset != len(body):
            raise TritonError.invalid_arg(
                f"unexpected additional input data for model '{model_name}'"
            )
        if "outputs" in document:
            _decode_outputs(document["outputs"], request, plan, regions)
    except BaseException:
        end_region_use(request)  # a request that failed to decode uses no region
        raise
    if plan.regions is not None:
        request.output_query = output_query(plan.regions)
    if key is not None and sizes is not None and plan.regions is None and not request.id:
        if len(_TEMPLATES) >= _TEMPLATE_LIMIT:
            _TEMPLATES.clear()
        _TEMPLATES[key] = _Template.of(request, parameters, sizes, plan)
    return request, plan


# Decoded headers by (header bytes, body length): clients send the same header with every
# request of a kind (tritonclient, perf_analyzer), and a header that decoded once, with a body
# as long, decodes again to the same request: only its tensors' bytes differ. Kept for headers
# whose inputs are all binary and that name no shared memory (regions may change between
# requests), so a request from a template reads nothing but its own body; not for headers with
# an `id`, which is most often new with every request. Bounded, as headers may vary without end.
_TEMPLATE_LIMIT = 256
_TEMPLATE_HEADER_LIMIT = 4096


@dataclass(frozen=True, slots=True, eq=False)
class _Template:
    """What a header decodes to, less the tensors' bytes; the `form` of its requests (compared
    by identity)."""

    id: str
    parameters: dict[str, Any]  # as apply_parameters takes them
    inputs: tuple[tuple[WireInput, int], ...]  # and each one's size in the body
    outputs: tuple[tuple[str, dict[str, Any]], ...]  # requested: name, parameters
    default_binary: bool
    requested: dict[str, tuple[bool, int]]
    classifies: bool

    @classmethod
    def of(cls, request: InferenceRequest, parameters: dict[str, Any], sizes: list[int],
           plan: OutputPlan) -> _Template:
        inputs = tuple((WireInput(t.name, t.datatype, t.shape), size)
                       for t, size in zip(request.inputs.values(), sizes, strict=True))
        outputs = tuple((o.name, dict(o.parameters)) for o in request.requested_outputs)
        return cls(request.id, dict(parameters), inputs, outputs, plan.default_binary,
                   dict(plan.requested), plan.classifies)

    def request(self, model_name: str, model_version: int, view: memoryview, offset: int
                ) -> tuple[InferenceRequest, OutputPlan]:
        """A request of this header, its tensors read from `view` past the header. The
        conversion of each tensor's bytes is checked again (BYTES elements are the body's)."""
        request = InferenceRequest(model_name, model_version, id=self.id)
        request.form = self
        if self.parameters:
            apply_parameters(request, self.parameters)
        prefix = log_prefix(self.id)
        tensors = request.inputs
        for wire, size in self.inputs:
            tensors[wire.name] = Tensor(wire.name, wire.datatype, wire.shape,
                                        wire.array(view[offset : offset + size], model_name,
                                                   prefix))
            offset += size
        requested = request.requested_outputs
        for name, parameters in self.outputs:
            requested.append(RequestedOutput(name, dict(parameters)))
        return request, OutputPlan(self.default_binary, dict(self.requested), None,
                                   self.classifies)


_TEMPLATES: dict[tuple[bytes, int], _Template] = {}


# The request parameters Triton's HTTP frontend reads itself: what each value must be, and the
# accessor's failure when it is not. `binary_data_output` is the frontend's own option.
_READ_PARAMETERS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "sequence_id": (lambda value: type(value) is str or is_uint(value), NOT_STRING),
    "sequence_start": (is_bool, NOT_BOOL),
    "sequence_end": (is_bool, NOT_BOOL),
    "priority": (is_uint, NOT_UINT),
    "timeout": (is_uint, NOT_UINT),
    "binary_data_output": (is_bool, NOT_BOOL),
}
# What a parameter for the model may be.
_MODEL_PARAMETER_TYPES = frozenset((str, int, bool, float))


def _request_parameters(parameters: Any, plan: OutputPlan) -> dict[str, Any]:
    """Request parameters checked as Triton's HTTP frontend checks them, for `apply_parameters`
    (`binary_data_output` goes to the plan instead)."""
    if not isinstance(parameters, dict):
        raise TritonError.invalid_arg(
            "failed to get request params.: attempt to get members for non-object"
        )
    values: dict[str, Any] = {}
    for key, value in parameters.items():
        rule = _READ_PARAMETERS.get(key)
        if rule is not None:
            valid, why = rule
            if not valid(value):
                raise parse_error(key, why)
            if key == "binary_data_output":
                plan.default_binary = value
                continue
        elif key.startswith("triton_"):
            raise TritonError.invalid_arg(
                "parameter keys starting with 'triton_' are reserved for Triton usage and "
                "should not be specified."
            )
        elif type(value) not in _MODEL_PARAMETER_TYPES:
            raise TritonError.invalid_arg(
                f"parameter '{key}' has invalid type. It should be either 'int', 'bool', or "
                "'string'."
            )
        values[key] = value
    return values


def _decode_inputs(
    document: dict[str, Any],
    request: InferenceRequest,
    view: memoryview,
    offset: int,
    config: Any,
    prefix: str,
    regions: SharedMemoryManager,
) -> tuple[int, list[int] | None]:
    """Fill request.inputs; return the body offset after the last binary input, and each
    input's size in the body when every input is binary (else None)."""
    model_name = request.model_name
    sizes: list[int] | None = []
    if "inputs" not in document:
        raise parse_error("inputs", missing("inputs"))
    inputs = document["inputs"]
    if type(inputs) is not list:
        raise parse_error("inputs", NOT_ARRAY)
    end = len(view)
    tensors = request.inputs
    held = HeldDataError()
    for item in inputs:
        item, params = _entry(item)
        binary = "binary_data_size" in params
        if ("data" in item) + binary + ("shared_memory_region" in params) != 1:
            _check_content_fields(item, params)
        name = item.get("name")
        if type(name) is not str:
            name = _member_string(item, "name")
        datatype = item.get("datatype")
        if type(datatype) is not str:
            datatype = _member_string(item, "datatype")
        shape = _shape(item)
        if name in tensors:
            raise TritonError.invalid_arg(f"{prefix}input '{name}' already exists in request")
        if datatype not in DATATYPES and (binary or element_count(shape) == 0):
            raise _invalid_datatype(name, model_name, prefix, config)

        if binary:
            size = params["binary_data_size"]
            if not is_uint(size):
                raise parse_error("binary_data_size", NOT_UINT)
            available = end - offset
            if size > available:
                raise TritonError.invalid_arg(
                    f"unexpected size for input '{name}', expecting {size - available} "
                    f"additional bytes for model '{model_name}'"
                )
            data = held.convert(input_from_wire, view[offset : offset + size], datatype,
                                shape, name, model_name, prefix)
            offset += size
            if sizes is not None:
                sizes.append(size)
        elif "shared_memory_region" in params:
            window = _tensor_region(params, regions)
            request.region_windows += (window,)
            data = held.convert(input_from_wire, window.read(), datatype, shape, name,
                                model_name, prefix)
            sizes = None
        else:
            data = held.convert(array_from_json, name, datatype, shape, item["data"],
                                model_name, prefix)
            sizes = None
        if data is not None:
            tensors[name] = Tensor(name, datatype, shape, data)
    held.check()
    return offset, sizes


def _entry(item: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """An input or output entry and its parameters; Triton reads a malformed one as empty."""
    if not isinstance(item, dict):
        item = {}
    params = item.get("parameters")
    return item, params if isinstance(params, dict) else {}


def _tensor_region(params: dict[str, Any], regions: SharedMemoryManager) -> Window:
    """The window a tensor's shared-memory parameters name, read as Triton's HTTP frontend reads
    them (a missing size fails the region's bounds check)."""
    region = params["shared_memory_region"]
    if type(region) is not str:
        raise parse_error("shared_memory_region", NOT_STRING)
    byte_size = params.get("shared_memory_byte_size")
    if byte_size is not None and not is_uint(byte_size):
        raise parse_error("shared_memory_byte_size", NOT_UINT)
    offset = params.get("shared_memory_offset", 0)
    if not is_uint(offset):
        raise parse_error("shared_memory_offset", NOT_UINT)
    return region_window(regions, region, offset, byte_size)


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
        raise parse_error(member, missing(member))
    value = item[member]
    if type(value) is not str:
        raise parse_error(member, NOT_STRING)
    return value


def _shape(item: dict[str, Any]) -> tuple[int, ...]:
    if "shape" not in item:
        raise parse_error("shape", missing("shape"))
    shape = item["shape"]
    if type(shape) is not list:
        raise parse_error("shape", NOT_ARRAY)
    for dim in shape:
        if type(dim) is not int or dim < 0 or dim > _INT64_MAX:
            raise parse_error("shape", NOT_UINT)
    return tuple(shape)


def _decode_outputs(outputs: Any, request: InferenceRequest, plan: OutputPlan,
                    regions: SharedMemoryManager) -> None:
    if type(outputs) is not list:
        raise parse_error("outputs", NOT_ARRAY)
    check_requested_outputs(len(outputs), request.model_name)
    for item in outputs:
        item, params = _entry(item)
        if "shared_memory_region" in params:
            if "classification" in params:
                raise TritonError.invalid_arg(
                    "Output can't set both 'shared_memory_region' and 'classification'"
                )
            if params.get("binary_data") is True:
                raise TritonError.invalid_arg(
                    "Output can't set both 'shared_memory_region' and 'binary_data'"
                )
        name = item.get("name")
        if type(name) is not str:
            name = _member_string(item, "name")
        classes = params.get("classification", 0)
        if not is_uint(classes):
            raise TritonError.invalid_arg(f"Unable to set 'classification': {NOT_UINT}")
        if "shared_memory_region" in params:
            if plan.regions is None:
                plan.regions = {}
            plan.regions[name] = window = _tensor_region(params, regions)
            request.region_windows += (window,)
        binary = params.get("binary_data", False)
        if not is_bool(binary):
            raise parse_error("binary_data", NOT_BOOL)
        if name not in plan.requested:
            request.requested_outputs.append(RequestedOutput(name, dict(params)))
        plan.requested[name] = (binary, classes)
        if classes:
            plan.classifies = True


def _decode_raw(
    model_name: str, model_version: int, body: bytes, config: Any
) -> tuple[InferenceRequest, OutputPlan]:
    """A body that is one input's raw bytes (Inference-Header-Content-Length: 0)."""
    request = InferenceRequest(model_name, model_version)
    tensor = raw_input_tensor(config, body, model_name, log_prefix(""))
    request.inputs[tensor.name] = tensor
    return request, OutputPlan(default_binary=True)
