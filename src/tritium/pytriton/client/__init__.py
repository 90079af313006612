"""`pytriton.client`: ModelClient and DecoupledModelClient (synchronous), FuturesModelClient
(concurrent.futures), AsyncioModelClient and AsyncioDecoupledModelClient (asyncio); the errors
are in `.exceptions` (also re-exported here, as before this was a package)."""

from tritium.pytriton.client.client import (
    AsyncioDecoupledModelClient,
    AsyncioModelClient,
    DecoupledModelClient,
    FuturesModelClient,
    ModelClient,
)
from tritium.pytriton.client.exceptions import (
    PyTritonClientClosedError,
    PyTritonClientError,
    PyTritonClientInferenceServerError,
    PyTritonClientInvalidUrlError,
    PyTritonClientModelDoesntSupportBatchingError,
    PyTritonClientModelUnavailableError,
    PyTritonClientQueueFullError,
    PyTritonClientTimeoutError,
    PyTritonClientValueError,
)

__all__ = [
    "AsyncioDecoupledModelClient",
    "AsyncioModelClient",
    "DecoupledModelClient",
    "FuturesModelClient",
    "ModelClient",
    "PyTritonClientClosedError",
    "PyTritonClientError",
    "PyTritonClientInferenceServerError",
    "PyTritonClientInvalidUrlError",
    "PyTritonClientModelDoesntSupportBatchingError",
    "PyTritonClientModelUnavailableError",
    "PyTritonClientQueueFullError",
    "PyTritonClientTimeoutError",
    "PyTritonClientValueError",
]
