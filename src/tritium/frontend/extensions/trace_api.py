"""The trace extension on the wire: `GET/POST /v2[/models/M]/trace/setting` and the
TraceSetting RPC.

Both encodings carry values as strings (a list for `trace_level`); null (HTTP) or no value
(gRPC) clears a field so that it follows the global setting again. Values are parsed here
with Triton's messages (its C++ `stoi` reading included: a 32-bit signed number, so "-3" as a
rate wraps around to 4294967293 and 2147483648 is out of range) and applied through the
server's `TraceSettings`.
"""

from __future__ import annotations

from typing import Any

from tritonclient.grpc import service_pb2 as pb

from ...errors import TritonError
from ...server import InferenceServer
from ...trace_settings import LEVELS, TRACE_FILE_REFUSED, TraceSetting, leading_integer
from .json_codec import NOT_ARRAY, NOT_STRING, load_json

_SCALARS = ("trace_rate", "trace_count", "log_frequency")


def _known_model(server: InferenceServer, model: str) -> None:
    if model and not server.model_ready(model):
        raise TritonError.invalid_arg(f"Request for unknown model : {model}")


def _value(key: str, text: str, count_separator: str) -> int:
    number = leading_integer(text)
    if number is None:
        raise TritonError.invalid_arg(f"Unable to parse '{key}', got: {text}")
    low, high = (-1, (1 << 31) - 1) if key == "trace_count" else (0, (1 << 32) - 1)
    if not -(1 << 31) <= number < 1 << 31:  # past stoi's 32 bits, whatever the range says
        raise TritonError.invalid_arg(
            f"Unable to parse '{key}', value is out of range [ {low}, {high} ], got: {text}"
        )
    if key == "trace_count" and number < -1:
        raise TritonError.invalid_arg(
            f"Unable to parse 'trace_count'. Expecting value >= -1, got:{count_separator}{text}"
        )
    if key == "trace_count":
        return number
    return number % (1 << 32)  # a negative rate wraps around, as in Triton


def _levels(names: list[str]) -> tuple[str, ...]:
    """Triton's reading: OFF alone disables; unknown names are ignored (so they disable too)."""
    if "OFF" in names and len(names) > 1:
        raise TritonError.invalid_arg("Expect only one trace level 'OFF' is specified")
    return tuple(level for level in LEVELS if level in names)


# -- HTTP ---------------------------------------------------------------------------------------

def http_get(server: InferenceServer, model: str) -> dict[str, Any]:
    _known_model(server, model)
    return server.trace_settings.get(model).as_json()


def http_update(server: InferenceServer, model: str, body: bytes) -> dict[str, Any]:
    _known_model(server, model)
    document = load_json(body)
    if not isinstance(document, dict):
        return server.trace_settings.get(model).as_json()
    if document.get("trace_file") is not None:
        raise TritonError.unsupported(TRACE_FILE_REFUSED)
    changes: dict[str, Any] = {}
    if "trace_level" in document:
        levels = document["trace_level"]
        if levels is not None:
            if type(levels) is not list:
                raise TritonError.invalid_arg(NOT_ARRAY)
            if any(type(name) is not str for name in levels):
                raise TritonError.invalid_arg(NOT_STRING)
            levels = _levels(levels)
        changes["trace_level"] = levels
    for key in _SCALARS:
        if key in document:
            text = document[key]
            if text is not None and type(text) is not str:
                raise TritonError.invalid_arg(NOT_STRING)
            changes[key] = None if text is None else _value(key, text, "")
    return server.trace_settings.update(model, changes).as_json()


# -- gRPC ---------------------------------------------------------------------------------------

def grpc_update(server: InferenceServer,
                request: pb.TraceSettingRequest) -> pb.TraceSettingResponse:
    """The TraceSetting RPC: apply the request's settings (if any), return the result."""
    model = request.model_name
    _known_model(server, model)
    given = request.settings
    if "trace_file" in given and given["trace_file"].value:
        raise TritonError.unsupported(TRACE_FILE_REFUSED)
    changes: dict[str, Any] = {}
    if "trace_level" in given:
        values = list(given["trace_level"].value)
        changes["trace_level"] = _levels(values) if values else None
    for key in _SCALARS:
        if key in given:
            values = given[key].value
            if len(values) > 1:
                raise TritonError.invalid_arg(f"expect only 1 value for '{key}'")
            changes[key] = _value(key, values[0], " ") if values else None
    setting: TraceSetting = (server.trace_settings.update(model, changes) if changes
                             else server.trace_settings.get(model))
    response = pb.TraceSettingResponse()
    for key, value in setting.as_json().items():
        response.settings[key].value.extend(value if isinstance(value, list) else [value])
    return response


__all__ = ["grpc_update", "http_get", "http_update"]
