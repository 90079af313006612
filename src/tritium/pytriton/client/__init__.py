"""`pytriton.client`: ModelClient and DecoupledModelClient (synchronous), FuturesModelClient
(concurrent.futures), AsyncioModelClient and AsyncioDecoupledModelClient (asyncio); the errors
are in `.exceptions` (also re-exported here, as before this was a package). The names are those
the two modules list; `.utils`, `.auth` and `.warnings` are PyTriton's helper modules."""

from tritium.pytriton.client import client, exceptions
from tritium.pytriton.client.client import *  # noqa: F403
from tritium.pytriton.client.exceptions import *  # noqa: F403

__all__ = [*client.__all__, *exceptions.__all__]
