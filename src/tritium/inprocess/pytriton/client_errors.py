"""The errors PyTriton's clients raise (PyTriton 0.7's `pytriton.client.exceptions`).

Scripts catch these by class, so the names and the hierarchy are PyTriton's: every one is a
PyTritonClientError, and an invalid URL is also a value error. Two also derive from the builtin
they mean (ValueError, TimeoutError), so code that catches those catches them too.
"""

from __future__ import annotations


class PyTritonClientError(Exception):
    """Any error the clients raise on purpose; `message` is the text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class PyTritonClientValueError(PyTritonClientError, ValueError):
    """A call the client cannot make (an argument the model cannot take, mixed conventions)."""


class PyTritonClientInvalidUrlError(PyTritonClientValueError):
    """The server URL cannot be parsed, or names a scheme other than http and grpc."""


class PyTritonClientTimeoutError(PyTritonClientError, TimeoutError):
    """The model was not ready within init_timeout_s, or a response within
    inference_timeout_s."""


class PyTritonClientModelUnavailableError(PyTritonClientError):
    """The model (or the version asked for) is not served by the server."""


class PyTritonClientClosedError(PyTritonClientError):
    """The client was used after close()."""


class PyTritonClientModelDoesntSupportBatchingError(PyTritonClientError):
    """infer_batch on a model without a batch dimension (max_batch_size 0)."""


class PyTritonClientInferenceServerError(PyTritonClientError):
    """The server or the model failed the request, or the client does not fit the model's
    transaction policy (decoupled or not)."""


class PyTritonClientQueueFullError(PyTritonClientError):
    """A non-blocking FuturesModelClient's queue of requests is full."""


class PyTritonWarning(UserWarning):
    """PyTriton's base warning (`pytriton.client.warnings`)."""


class NotSupportedTimeoutWarning(PyTritonWarning):
    """PyTriton warns with this where tritonclient cannot apply a timeout. Tritium's clients
    never warn with it (every gRPC call here carries its own deadline); it exists so that
    scripts filtering it keep working."""
