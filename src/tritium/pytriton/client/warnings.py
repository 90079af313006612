"""`pytriton.client.warnings`: the warning classes PyTriton's clients use."""

from tritium.inprocess.pytriton.client_errors import NotSupportedTimeoutWarning, PyTritonWarning

__all__ = ["NotSupportedTimeoutWarning", "PyTritonWarning"]
