"""An HTTP/1.1 endpoint: the listener that accepts `connection.HttpConnection`s on one address
and port, in the server's loop, for the HTTP/REST frontend and the other HTTP services (metrics,
SageMaker, Vertex AI, OpenAI). Apart from the connection because it is about all of them at once:
the periodic sweep that closes late heads (408) and idle keep-alive connections, and the stop.

On stop it refuses new connections (the HTTP port first serves its open ones until their
clients close them, as Triton's does), closes idle ones, lets requests in flight finish within
the grace period, then cancels what is left.
"""

from __future__ import annotations

import asyncio
import logging
import math

from ...handoff import Deferral
from .connection import Handler, HttpConnection
from .limits import DEFAULT_MAX_INPUT_SIZE, HEADER_TIMEOUT, HttpLimits
from .listen import bind

log = logging.getLogger("tritium.http")


class HttpEndpoint:
    """Serves `handler` on address:port inside the running event loop."""

    def __init__(self, handler: Handler, address: str, port: int, service: str,
                 max_input_size: int = DEFAULT_MAX_INPUT_SIZE) -> None:
        self.handler = handler
        self.limits = HttpLimits()  # set before start()
        # --reuse-http-port; header names kept as sent (for header forwarding).
        self.reuse_port = False
        self.keep_header_names = False
        self.max_input_size = max_input_size
        self.address = address
        self.port = port
        self.service = service
        self.description = f"{service} at {address}:{port}"
        self.connections: set[HttpConnection] = set()
        self.stopping = False
        self.loop: asyncio.AbstractEventLoop  # set by start()
        self.deferral: Deferral  # set by start(): the loop's hand-offs of one turn
        self._server: asyncio.AbstractServer | None = None
        self._sweeper: asyncio.TimerHandle | None = None

    async def start(self) -> None:
        """Bind and listen; returns once connections are accepted. OSError if the port is taken."""
        self.loop = asyncio.get_running_loop()
        self.deferral = Deferral(self.loop.call_soon)
        sock = bind(self.address, self.port, self.reuse_port)
        self.port = sock.getsockname()[1]
        self.description = f"{self.service} at {self.address}:{self.port}"
        try:
            self._server = await self.loop.create_server(
                lambda: HttpConnection(self), sock=sock, backlog=1024
            )
        except BaseException:
            sock.close()
            raise
        self._sweeper = self.loop.call_later(self.limits.sweep_interval_s, self._sweep)

    def _sweep(self) -> None:
        """Close connections whose head is late (408) and keep-alive connections idle for
        longer than their timeout."""
        now = self.loop.time()
        idle_limit = now - self.limits.keepalive_timeout_s
        head_limit = now - self.limits.header_timeout_s
        for connection in list(self.connections):
            if connection.busy:
                continue
            started = connection.head_started
            if started is not None:
                if started < head_limit:
                    connection.refuse(HEADER_TIMEOUT)
            elif connection.idle_since < idle_limit:
                connection.close()
        self._sweeper = self.loop.call_later(self.limits.sweep_interval_s, self._sweep)

    async def serve_open_connections(self, timeout: float, service_name: str) -> None:
        """The first step of Triton's exit: no new connections, while the open ones (idle
        keep-alive ones too) are served as before until their clients close them, for up to
        `timeout` seconds; each second the log says how many are left, in Triton's words
        ("Timeout 30: Found 1 HTTP service connections"). A client that keeps its connection
        open can so finish its work before the server stops taking requests."""
        server = self._server
        if server is None:
            return
        server.close()  # stop() finishes the job
        deadline = self.loop.time() + timeout
        report_at = 0.0
        while self.connections and (now := self.loop.time()) < deadline:
            if now >= report_at:
                log.info("Timeout %d: Found %d %s service connections",
                         math.ceil(deadline - now), len(self.connections), service_name)
                report_at = now + 1.0
            await asyncio.sleep(0.05)

    async def stop(self, grace: float) -> None:
        """Stop accepting; let in-flight requests finish for up to `grace` seconds."""
        server = self._server
        if server is None:
            return
        self._server = None
        self.stopping = True
        if self._sweeper is not None:
            self._sweeper.cancel()
        server.close()
        for connection in list(self.connections):
            connection.shutdown()
        try:
            await asyncio.wait_for(self._drained(), timeout=max(grace, 0.0))
        except asyncio.TimeoutError:
            for connection in list(self.connections):
                connection.cancel()
        for connection in list(self.connections):
            connection.close()
        await server.wait_closed()

    async def _drained(self) -> None:
        while self.connections:
            await asyncio.sleep(0.05)
