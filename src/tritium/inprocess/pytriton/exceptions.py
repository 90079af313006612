"""PyTriton's exception classes (`pytriton.exceptions`), under its names.

Each derives from PyTritonError as in PyTriton; the validation and runtime errors also derive
from ValueError / RuntimeError, so code that caught those keeps working.
"""

from __future__ import annotations


class PyTritonError(Exception):
    """Any error PyTriton's API raises on purpose."""

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class PyTritonValidationError(PyTritonError, ValueError):
    """An input or a result that the model's contract does not allow (its message goes back
    to the client)."""


class PyTritonInvalidOperationError(PyTritonError):
    """An operation the object's state does not allow (e.g. binding after stop)."""


class PyTritonBadParameterError(PyTritonError):
    """A decorator's or a call's parameter that does not fit the model (fill_optionals'
    defaults, for one)."""


class PyTritonModelConfigError(PyTritonError):
    """A model configuration that cannot be served."""


class PyTritonUnrecoverableError(PyTritonError):
    """The server went away: nothing more can be served."""


class PyTritonRuntimeError(PyTritonError, RuntimeError):
    """A decorator that cannot do its work on what the function gave it."""
