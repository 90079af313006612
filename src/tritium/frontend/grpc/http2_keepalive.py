"""Keepalive and connection age on one HTTP/2 connection, as gRPC core's server does them.

Every keepalive time the server pings a client with calls open (or any client, when pings
without calls are permitted) and closes the connection if the ping goes unanswered for the
keepalive timeout; no more than the allowed pings without data go out in between. A connection
older than the maximum age (spread by +-10 %, so clients do not reconnect at once) is sent
GOAWAY and closed after the grace time. Pings from the client are judged by
`http2_limits.PingPolicy`. The options are `http2_limits.KeepAliveOptions`.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Sized
from typing import Protocol

from .http2_frames import PING, frame
from .http2_limits import H2Limits, PingPolicy

log = logging.getLogger("tritium.frontend.http2")

# The payload of the server's keepalive pings.
KEEPALIVE_PING = b"tritiumk"


class PingedConnection(Protocol):
    """What keepalive needs of its connection (`http2.H2Connection`): a protocol, so that the
    connection imports keepalive and not the other way round."""

    closed: bool
    peer: str
    transport: asyncio.Transport | None

    @property
    def limits(self) -> H2Limits: ...

    @property
    def streams(self) -> Sized: ...

    def write(self, *data: bytes) -> None: ...

    def go_away(self, debug: bytes = b"") -> None: ...

    def close(self) -> None: ...


class Keepalive:
    """The timers and ping counts of one connection."""

    def __init__(self, connection: PingedConnection) -> None:
        self._connection = connection
        self._options = connection.limits.keepalive
        self._policy = PingPolicy(self._options)
        self._pings_without_data = 0
        self._timers: dict[str, asyncio.TimerHandle] = {}

    def start(self) -> None:
        """The connection is made: the first keepalive and the connection's age start."""
        options = self._options
        self._schedule("keepalive", options.keepalive_time_ms, self._keepalive)
        if options.max_connection_age_ms is not None:
            age = options.max_connection_age_ms * random.uniform(0.9, 1.1)
            self._schedule("age", age, self._max_age_reached)

    def stop(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    def data_sent(self) -> None:
        """The server sent headers, data or a window update: ping counts start over."""
        self._policy.data_sent()
        self._pings_without_data = 0

    def ping_received(self, idle: bool) -> bool:
        """A ping from the client; True when it is one too many (`idle`: no call open)."""
        return self._policy.received(idle)

    def ping_acked(self, payload: bytes) -> None:
        if payload == KEEPALIVE_PING:
            self._cancel("keepalive_timeout")

    def _schedule(self, name: str, delay_ms: float, callback: Callable[[], None]) -> None:
        self._cancel(name)
        loop = asyncio.get_running_loop()
        self._timers[name] = loop.call_later(delay_ms / 1000.0, callback)

    def _cancel(self, name: str) -> None:
        timer = self._timers.pop(name, None)
        if timer is not None:
            timer.cancel()

    def _keepalive(self) -> None:
        connection = self._connection
        if connection.closed:
            return
        options = self._options
        self._schedule("keepalive", options.keepalive_time_ms, self._keepalive)
        if not connection.streams and not options.keepalive_permit_without_calls:
            return
        most = options.http2_max_pings_without_data
        if most and self._pings_without_data >= most:
            return
        if "keepalive_timeout" in self._timers:
            return  # the last one is still unanswered
        self._pings_without_data += 1
        connection.write(frame(PING, 0, 0, KEEPALIVE_PING))
        self._schedule("keepalive_timeout", options.keepalive_timeout_ms,
                       self._keepalive_expired)

    def _keepalive_expired(self) -> None:
        connection = self._connection
        log.debug("HTTP/2: %s did not answer a keepalive ping: closing", connection.peer)
        self._timers.pop("keepalive_timeout", None)
        if connection.transport is not None and not connection.closed:
            connection.transport.abort()

    def _max_age_reached(self) -> None:
        self._timers.pop("age", None)
        self._connection.go_away(b"max_age")
        grace = self._options.max_connection_age_grace_ms
        if grace is not None:
            self._schedule("age_grace", grace, self._connection.close)
