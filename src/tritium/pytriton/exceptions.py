"""`pytriton.exceptions`: PyTriton's exception classes."""

from tritium.inprocess.pytriton.exceptions import (
    PyTritonBadParameterError,
    PyTritonError,
    PyTritonInvalidOperationError,
    PyTritonModelConfigError,
    PyTritonRuntimeError,
    PyTritonUnrecoverableError,
    PyTritonValidationError,
)

__all__ = ["PyTritonBadParameterError", "PyTritonError", "PyTritonInvalidOperationError",
           "PyTritonModelConfigError", "PyTritonRuntimeError", "PyTritonUnrecoverableError",
           "PyTritonValidationError"]
