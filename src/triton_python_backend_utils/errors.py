"""Errors: the exception a model raises (`TritonModelException`) and the error a response
carries (`TritonError`), with Triton's error codes."""

from __future__ import annotations

from enum import IntEnum

from .pybind_args import IncompatibleArguments, as_str, pybind_constructor


class TritonModelException(Exception):
    """Raised by the model (or by this module) for an error Triton reports to the client."""


class _ErrorCode(IntEnum):
    UNKNOWN = 0
    INTERNAL = 1
    NOT_FOUND = 2
    INVALID_ARG = 3
    UNAVAILABLE = 4
    UNSUPPORTED = 5
    ALREADY_EXISTS = 6
    CANCELLED = 7


class TritonError:
    """An error carried by an InferenceResponse: a message and a Triton error code."""

    UNKNOWN = _ErrorCode.UNKNOWN
    INTERNAL = _ErrorCode.INTERNAL
    NOT_FOUND = _ErrorCode.NOT_FOUND
    INVALID_ARG = _ErrorCode.INVALID_ARG
    UNAVAILABLE = _ErrorCode.UNAVAILABLE
    UNSUPPORTED = _ErrorCode.UNSUPPORTED
    ALREADY_EXISTS = _ErrorCode.ALREADY_EXISTS
    CANCELLED = _ErrorCode.CANCELLED

    @pybind_constructor(
        "c_python_backend_utils.TritonError(message: str, code: "
        "c_python_backend_utils.TritonError.__ErrorCode = <__ErrorCode.INTERNAL: 1>)"
    )
    def __init__(self, message: str, code: int = _ErrorCode.INTERNAL) -> None:
        message = as_str(message)
        if code not in _ErrorCode.__members__.values():
            raise IncompatibleArguments()
        self._message = message
        self._code = _ErrorCode(code)

    def message(self) -> str:
        return self._message

    def code(self) -> _ErrorCode:
        return self._code

    def __repr__(self) -> str:
        return f"TritonError({self._message!r}, TritonError.{self._code.name})"
