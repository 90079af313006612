"""One error type carrying Triton's status codes.

Every layer raises `TritonError`; each frontend maps its code to a transport status the way
Triton does (`http_status`, `grpc_code`), so the same failure reads the same over HTTP and gRPC.
"""

from __future__ import annotations

import enum


class Code(enum.Enum):
    """TRITONSERVER_Error_Code, with the HTTP status and gRPC code Triton maps each to."""

    UNKNOWN = ("UNKNOWN", 400, "UNKNOWN")
    INTERNAL = ("INTERNAL", 500, "INTERNAL")
    NOT_FOUND = ("NOT_FOUND", 404, "NOT_FOUND")
    INVALID_ARG = ("INVALID_ARG", 400, "INVALID_ARGUMENT")
    UNAVAILABLE = ("UNAVAILABLE", 503, "UNAVAILABLE")
    UNSUPPORTED = ("UNSUPPORTED", 501, "UNIMPLEMENTED")
    ALREADY_EXISTS = ("ALREADY_EXISTS", 400, "ALREADY_EXISTS")  # Triton 2.51: 400, not 409
    CANCELLED = ("CANCELLED", 400, "CANCELLED")

    @property
    def http_status(self) -> int:
        return self.value[1]

    @property
    def status_text(self) -> str:
        """How Triton's Status::AsString names the code ("Invalid argument: ..."), as in its
        log lines."""
        return _STATUS_TEXT[self]

    @property
    def grpc_name(self) -> str:
        """Name of the `grpc.StatusCode` member (a string: the core never imports grpc)."""
        return self.value[2]


_STATUS_TEXT = {
    Code.UNKNOWN: "Unknown", Code.INTERNAL: "Internal", Code.NOT_FOUND: "Not found",
    Code.INVALID_ARG: "Invalid argument", Code.UNAVAILABLE: "Unavailable",
    Code.UNSUPPORTED: "Unsupported", Code.ALREADY_EXISTS: "Already exists",
    Code.CANCELLED: "Cancelled",
}


class TritonError(Exception):
    """An error with a Triton status code; `str(err)` is the message a client sees."""

    def __init__(self, code: Code, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"TritonError({self.code.name}, {self.message!r})"

    @property
    def http_status(self) -> int:
        return self.code.http_status

    # Short constructors keep call sites readable: `raise TritonError.invalid_arg(...)`.
    @classmethod
    def invalid_arg(cls, message: str) -> TritonError:
        return cls(Code.INVALID_ARG, message)

    @classmethod
    def not_found(cls, message: str) -> TritonError:
        return cls(Code.NOT_FOUND, message)

    @classmethod
    def unavailable(cls, message: str) -> TritonError:
        return cls(Code.UNAVAILABLE, message)

    @classmethod
    def unsupported(cls, message: str) -> TritonError:
        return cls(Code.UNSUPPORTED, message)

    @classmethod
    def internal(cls, message: str) -> TritonError:
        return cls(Code.INTERNAL, message)

    @classmethod
    def already_exists(cls, message: str) -> TritonError:
        return cls(Code.ALREADY_EXISTS, message)

    @classmethod
    def cancelled(cls, message: str) -> TritonError:
        return cls(Code.CANCELLED, message)


def as_triton_error(exc: BaseException) -> TritonError:
    """Wrap anything a backend raised so it reaches the client as INTERNAL with its message."""
    if isinstance(exc, TritonError):
        return exc
    return TritonError(Code.INTERNAL, str(exc) or type(exc).__name__)
