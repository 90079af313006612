"""`pytriton.client`: ModelClient (synchronous, HTTP or gRPC), DecoupledModelClient (gRPC
streams) and the client errors of `pytriton.client.exceptions`."""

from tritium.inprocess.pytriton.client import (
    DecoupledModelClient,
    ModelClient,
    PyTritonClientError,
    PyTritonClientInferenceServerError,
    PyTritonClientModelDoesntSupportBatchingError,
    PyTritonClientTimeoutError,
    PyTritonClientValueError,
)

__all__ = ["DecoupledModelClient", "ModelClient", "PyTritonClientError",
           "PyTritonClientInferenceServerError", "PyTritonClientModelDoesntSupportBatchingError",
           "PyTritonClientTimeoutError", "PyTritonClientValueError"]
