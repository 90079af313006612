"""The InferParameter maps of a ModelInferRequest as plain values, checked as Triton's gRPC
frontend checks them: the request's parameters (the kinds it reads itself, the model's, the
reserved `triton_` keys), the inputs' and outputs' (unchecked), and the shared-memory ones that
name where a tensor lives. Apart from `infer_request` because protobuf's `oneof` kinds and
Triton's words for them are a concern of their own, shared by the unary and streaming calls.
"""

from __future__ import annotations

from typing import Any

from tritonclient.grpc import service_pb2 as pb

from ...errors import TritonError
from ..extensions.shared_memory import SharedMemoryManager, Window, region_window

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


def checked_request_parameters(params: Any) -> dict[str, Any]:
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


def plain_parameters(params: Any) -> dict[str, Any]:
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


SHM_PARAMETERS = frozenset(("shared_memory_region", "shared_memory_offset",
                             "shared_memory_byte_size"))


def tensor_region(params: Any, name: str, regions: SharedMemoryManager) -> Window:
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
