"""The tritonclient HTTP clients a test opens, so that `ServerProcess.stop()` hangs them up first.

On SIGTERM the server, as Triton's does, serves the HTTP connections still open until their
clients close them, for up to --exit-timeout-secs (30 s). tritonclient keeps its connections
open between requests, and a test often stops its server with its client still in scope: each
such stop would wait the whole timeout. A user's program ends its own connections before it
stops the server; `hang_up` does that for a test: it closes the idle connections of the
clients of one port, leaving the clients usable (a later request opens a new connection).
"""

from __future__ import annotations

import re
import weakref
from typing import Any

import tritonclient.http as httpclient

_ports: weakref.WeakKeyDictionary[httpclient.InferenceServerClient, int] = (
    weakref.WeakKeyDictionary())


def track() -> None:
    """Record from now on every tritonclient.http client with the port it talks to."""
    cls = httpclient.InferenceServerClient
    if getattr(cls.__init__, "tracked", False):
        return
    original = cls.__init__

    def init(self: httpclient.InferenceServerClient, url: str, *args: Any, **kwargs: Any) -> None:
        original(self, url, *args, **kwargs)
        port = re.search(r":(\d+)", url)
        if port is not None:
            _ports[self] = int(port.group(1))

    init.tracked = True  # type: ignore[attr-defined]
    cls.__init__ = init  # type: ignore[method-assign]


def hang_up(port: int) -> None:
    """Close the idle connections the tracked clients hold to `port`."""
    for client, client_port in list(_ports.items()):
        if client_port != port:
            continue
        queue = client._client_stub._connection_pool._socket_queue
        while not queue.empty():
            queue.get(block=False).close()
