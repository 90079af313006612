"""Serving an ASGI app (the metrics endpoint) with uvicorn.

uvicorn runs inside the process's one event loop rather than through `uvicorn.run`, so it never
installs signal handlers of its own: the process owner (serving.py) decides when to stop. (The
HTTP/REST frontend, where every request counts, has its own lean server: `http/server.py`.)
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import uvicorn

from .http.server import bind

ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]


class AsgiEndpoint:
    """An ASGI app served by uvicorn inside the server's event loop, on address:port."""

    def __init__(self, app: ASGIApp, address: str, port: int, service: str) -> None:
        self.app = app
        self.address = address
        self.port = port
        self.service = service
        self.description = f"{service} at {address}:{port}"
        self._uvicorn: uvicorn.Server | None = None
        self._socket: socket.socket | None = None
        self._main: asyncio.Task | None = None

    async def start(self) -> None:
        """Bind and listen; returns once connections are accepted. OSError if the port is taken."""
        sock = bind(self.address, self.port)
        self.port = sock.getsockname()[1]
        self.description = f"{self.service} at {self.address}:{self.port}"
        config = uvicorn.Config(
            self.app,
            host=self.address,
            port=self.port,
            loop="none",
            http="httptools",
            ws="none",
            lifespan="off",
            log_level="warning",
            access_log=False,
            server_header=False,
            date_header=False,
            # Triton keeps idle connections open; clients with pooled connections rely on it.
            timeout_keep_alive=3600,
        )
        config.load()
        server = uvicorn.Server(config)
        # uvicorn's serve() would install its own signal handlers; the process owner handles
        # signals, so run the same steps without them.
        server.lifespan = config.lifespan_class(config)
        try:
            await server.startup(sockets=[sock])
        except BaseException:
            sock.close()
            raise
        self._uvicorn, self._socket = server, sock
        self._main = asyncio.create_task(server.main_loop(), name=f"tritium-{self.service}")

    async def stop(self, grace: float) -> None:
        """Stop accepting; let in-flight requests finish for up to `grace` seconds."""
        server = self._uvicorn
        if server is None:
            return
        self._uvicorn = None
        server.should_exit = True
        if self._main is not None:  # the tick loop only refreshes headers: no need to wait
            self._main.cancel()
            try:
                await self._main
            except asyncio.CancelledError:
                pass
        # uvicorn annotates an int but waits with asyncio.wait_for: seconds as a float work.
        server.config.timeout_graceful_shutdown = max(grace, 0.0)  # type: ignore[assignment]
        await server.shutdown(sockets=[self._socket] if self._socket else None)
        for connection in list(server.server_state.connections):
            transport = getattr(connection, "transport", None)
            if transport is not None:
                transport.close()
