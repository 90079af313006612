"""`pytriton.client.client`: the client classes, where PyTriton defines them."""

from tritium.inprocess.pytriton.asyncio_client import (
    AsyncioDecoupledModelClient,
    AsyncioModelClient,
)
from tritium.inprocess.pytriton.client import ModelClient
from tritium.inprocess.pytriton.decoupled_client import DecoupledModelClient
from tritium.inprocess.pytriton.futures_client import FuturesModelClient

__all__ = ["AsyncioDecoupledModelClient", "AsyncioModelClient", "DecoupledModelClient",
           "FuturesModelClient", "ModelClient"]
