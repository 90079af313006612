"""`pytriton.proxy.types`: Request (a mapping of input name to array, with parameters)."""

from tritium.inprocess.pytriton.proxy import Request

__all__ = ["Request"]
