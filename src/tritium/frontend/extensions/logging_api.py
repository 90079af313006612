"""The logging extension on the wire: `GET/POST /v2/logging` and the LogSettings RPC.

Each frontend reads its own encoding (JSON members, or protobuf `SettingValue`s) with Triton's
messages for that frontend, then both apply the change through the one `LogSettings`.
Every setting is checked before any is applied. A verbose level is kept as Triton keeps it
(`verbose_level`): any unsigned 64-bit number is accepted over HTTP, and one that is negative
as a 32-bit int turns verbose logging off.
"""

from __future__ import annotations

from typing import Any

from tritonclient.grpc import service_pb2 as pb

from ...errors import TritonError
from ...logging_settings import FORMATS, LOG_FILE_REFUSED, LogSettings, verbose_level
from .json_codec import NOT_BOOL, NOT_STRING, NOT_UINT, is_bool, is_uint, load_json

_FLAGS = ("log_info", "log_warning", "log_error")


def http_update(settings: LogSettings, body: bytes) -> dict[str, Any]:
    """POST /v2/logging: apply the JSON object's settings, return them all."""
    document = load_json(body)
    if not isinstance(document, dict):
        return settings.as_json()  # Triton reads members of an object only
    if document.get("log_file") is not None:
        raise TritonError.unsupported(LOG_FILE_REFUSED)
    changes: dict[str, Any] = {}
    for key in _FLAGS:
        value = document.get(key)
        if value is not None and not is_bool(value):
            raise TritonError.invalid_arg(NOT_BOOL)
        changes[key] = value
    level = document.get("log_verbose_level")
    if level is not None and not is_uint(level):
        raise TritonError.invalid_arg(NOT_UINT)
    changes["log_verbose_level"] = None if level is None else verbose_level(level)
    log_format = document.get("log_format")
    if log_format is not None:
        if type(log_format) is not str:
            raise TritonError.invalid_arg(NOT_STRING)
        if log_format not in FORMATS:
            # Triton's HTTP frontend answers this one with UNAVAILABLE.
            raise TritonError.unavailable(f"invalid argument for --log_format, got: {log_format}")
    changes["log_format"] = log_format
    return settings.update(changes)


def _response(settings: LogSettings) -> pb.LogSettingsResponse:
    response = pb.LogSettingsResponse()
    for key, value in settings.as_json().items():
        target = response.settings[key]
        if isinstance(value, bool):
            target.bool_param = value
        elif isinstance(value, int):
            target.uint32_param = value
        else:
            target.string_param = value
    return response


def grpc_update(settings: LogSettings, request: pb.LogSettingsRequest) -> pb.LogSettingsResponse:
    """The LogSettings RPC: apply the request's settings (if any), return them all."""
    given = request.settings
    if "log_file" in given:
        raise TritonError.unsupported(LOG_FILE_REFUSED)
    changes: dict[str, Any] = {}
    for key in _FLAGS:
        if key in given:
            if given[key].WhichOneof("parameter_choice") != "bool_param":
                raise TritonError.invalid_arg(f"expect boolean for '{key}'")
            changes[key] = given[key].bool_param
    if "log_verbose_level" in given:
        value = given["log_verbose_level"]
        if value.WhichOneof("parameter_choice") != "uint32_param":
            raise TritonError.invalid_arg("expect int32 for 'log_verbose_level'")
        changes["log_verbose_level"] = verbose_level(value.uint32_param)
    if "log_format" in given:
        value = given["log_format"]
        if value.WhichOneof("parameter_choice") != "string_param":
            raise TritonError.invalid_arg("expect string for 'log_format'")
        if value.string_param not in FORMATS:
            raise TritonError.invalid_arg(
                f"invalid argument for log_format, got: {value.string_param}"
            )
        changes["log_format"] = value.string_param
    if changes:
        settings.update(changes)
    return _response(settings)


__all__ = ["grpc_update", "http_update"]
