"""The exception classes of Triton's in-process API (`tritonserver.InvalidArgumentError`, ...).

Triton's Python binding raises one class per TRITONSERVER_Error_Code, all derived from
`tritonserver.TritonError`. Here each class is also a `tritium.errors.TritonError` carrying that
code, so an error raised by the core and an error raised by this API are the same kind of object,
and `except tritonserver.NotFoundError` catches exactly what Triton's would.
"""

from __future__ import annotations

from typing import Any

from .. import errors as core


class TritonError(core.TritonError):
    """Base of the API's errors: `TritonError("message")`, code UNKNOWN unless a subclass says."""

    _code = core.Code.UNKNOWN

    def __init__(self, *args: Any) -> None:
        message = str(args[0]) if args else ""
        core.TritonError.__init__(self, self._code, message)
        # Triton appends the failed response to `args` (error.args += (response,)).
        self.args = args

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


class UnknownError(TritonError):
    _code = core.Code.UNKNOWN


class InternalError(TritonError):
    _code = core.Code.INTERNAL


class NotFoundError(TritonError):
    _code = core.Code.NOT_FOUND


class InvalidArgumentError(TritonError):
    _code = core.Code.INVALID_ARG


class UnavailableError(TritonError):
    _code = core.Code.UNAVAILABLE


class UnsupportedError(TritonError):
    _code = core.Code.UNSUPPORTED


class AlreadyExistsError(TritonError):
    _code = core.Code.ALREADY_EXISTS


class CancelledError(TritonError):
    _code = core.Code.CANCELLED


_BY_CODE: dict[core.Code, type[TritonError]] = {
    cls._code: cls
    for cls in (UnknownError, InternalError, NotFoundError, InvalidArgumentError,
                UnavailableError, UnsupportedError, AlreadyExistsError, CancelledError)
}


def api_error(error: core.TritonError) -> TritonError:
    """The API's class for a core error (the same object when it already is one)."""
    if isinstance(error, TritonError):
        return error
    converted = _BY_CODE[error.code](error.message)
    converted.__cause__ = error.__cause__
    return converted
