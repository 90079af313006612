"""`pytriton.client`: ModelClient (synchronous, HTTP or gRPC)."""

from tritium.inprocess.pytriton.client import ModelClient, PyTritonClientTimeoutError

__all__ = ["ModelClient", "PyTritonClientTimeoutError"]
