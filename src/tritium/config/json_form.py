"""The JSON form of a model configuration, as Triton serves it at GET /v2/models/<m>/config.

Triton prints the proto with the .proto field names and every field that has no presence
(scalars, repeated fields, maps) even at its default; enums are names and unset sub-messages
are left out. protobuf's JSON mapping writes 64-bit integers as strings, which Triton turns back
into numbers (ModelConfigToJson). We do the same for every int64/uint64 field found by walking
the descriptor, so a field added to the schema needs no list here. Map keys stay strings, as
JSON demands and as Triton leaves `dynamic_batching.priority_queue_policy` keys ("2").
Keys come out in .proto declaration order, as Triton's printer emits them.

The reverse (`model_config_from_json`) is Triton's JsonToModelConfig, used for a load with a
config override: unknown fields are errors, enum names are matched case-insensitively, and a
lone value where a list belongs (`"instance_group": {...}`) is a one-element list, as protobuf
C++'s JSON parser (JsonStringToMessage) takes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from tritonclient.grpc import model_config_pb2 as mc

from ..errors import TritonError
from . import lenient_json

_INT64_CPP_TYPES = frozenset({FieldDescriptor.CPPTYPE_INT64, FieldDescriptor.CPPTYPE_UINT64})

# A leaf rewrite: (JSON value of one scalar element, its field) -> new JSON value.
_Leaf = Callable[[Any, FieldDescriptor], Any]


def model_config_to_json(config: mc.ModelConfig) -> dict[str, Any]:
    """The dict Triton returns for this config (dump it with separators=(",", ":"))."""
    try:
        obj = json_format.MessageToDict(
            config, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
        )
    except TypeError:  # protobuf < 5.26 names the option differently
        obj = json_format.MessageToDict(
            # The stubs describe protobuf >= 5.26, which renamed the option.
            config,
            preserving_proto_field_name=True,
            including_default_value_fields=True,  # type: ignore[call-arg]
        )
    obj = _walk(obj, config.DESCRIPTOR, _int64_as_number)
    for member, names in _NEWER_THAN_2_51.items():
        for name in names:
            obj.get(member, {}).pop(name, None)
    return obj


# Members tritonclient's schema has and Triton 2.51's does not: 2.51 never lists them.
_NEWER_THAN_2_51 = {"ensemble_scheduling": ("max_inflight_requests",)}


def model_config_from_json(obj: dict[str, Any] | str | bytes) -> mc.ModelConfig:
    """Parse a config given as JSON (text or an already-decoded dict); INVALID_ARG if wrong."""
    if isinstance(obj, (str, bytes)):
        try:
            obj = lenient_json.loads(obj)
        except ValueError as exc:
            raise TritonError.invalid_arg(f"model configuration is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise TritonError.invalid_arg("model configuration JSON must be an object")
    config = mc.ModelConfig()
    try:
        json_format.ParseDict(_walk(obj, config.DESCRIPTOR, _enum_any_case), config)
    except json_format.ParseError as exc:
        # protobuf appends a long list of the available fields on a second line.
        raise TritonError.invalid_arg(str(exc).split("\n", 1)[0]) from None
    return config


def _int64_as_number(value: Any, field: FieldDescriptor) -> Any:
    if field.cpp_type in _INT64_CPP_TYPES and isinstance(value, str):
        return int(value)
    return value


def _enum_any_case(value: Any, field: FieldDescriptor) -> Any:
    """Like protobuf C++'s case_insensitive_enum_parsing: retry an unknown name upper-cased."""
    if field.enum_type is not None and isinstance(value, str):
        names = field.enum_type.values_by_name
        if value not in names and value.upper() in names:
            return value.upper()
    return value


def _walk(obj: dict[str, Any], descriptor: Descriptor, leaf: _Leaf) -> dict[str, Any]:
    """Rewrite every scalar of a JSON object with `leaf`, keys in declaration order.

    Keys the descriptor does not know (or values of the wrong JSON shape) are kept as they are,
    so that parsing reports them.
    """
    walked: dict[str, Any] = {}
    for field in descriptor.fields:
        for key in (field.name, field.json_name):
            if key in obj and key not in walked:
                walked[key] = _walk_field(obj[key], field, leaf)
    for key, value in obj.items():
        walked.setdefault(key, value)
    return walked


def _walk_field(value: Any, field: FieldDescriptor, leaf: _Leaf) -> Any:
    message_type = field.message_type
    if message_type is not None and message_type.GetOptions().map_entry:
        if not isinstance(value, dict):
            return value
        value_field = message_type.fields_by_name["value"]
        return {k: _walk_element(v, value_field, leaf) for k, v in value.items()}
    if _is_repeated(field):
        if value is None:  # parsing clears the field
            return value
        elements = value if isinstance(value, list) else [value]
        return [_walk_element(v, field, leaf) for v in elements]
    return _walk_element(value, field, leaf)


def _is_repeated(field: FieldDescriptor) -> bool:
    """protobuf 6 deprecates `label` for `is_repeated`; older releases only have `label`."""
    is_repeated = getattr(field, "is_repeated", None)
    if isinstance(is_repeated, bool):
        return is_repeated
    return field.label == FieldDescriptor.LABEL_REPEATED  # type: ignore[attr-defined]  # protobuf<6


def _walk_element(value: Any, field: FieldDescriptor, leaf: _Leaf) -> Any:
    if field.message_type is not None:
        return _walk(value, field.message_type, leaf) if isinstance(value, dict) else value
    return leaf(value, field)
