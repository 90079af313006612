"""Triton's "redis" cache (`--cache-config redis,host=H --cache-config redis,port=P`): responses
kept in a redis server, so that every server naming the same redis answers from one cache.

The settings are Triton's: `host` and `port` (both required), `user`/`password` (else the
environment's TRITONCACHE_REDIS_USERNAME / TRITONCACHE_REDIS_PASSWORD; no user is redis's
"default"), `db`, `connect_timeout` and `socket_timeout` in milliseconds (0, the default: the
connection waits forever, a call `DEFAULT_SOCKET_TIMEOUT_S`, below), `pool_size` connections
(1) of which a caller waits `wait_timeout` ms (1000) for one, and TLS: `tls_enabled=true` with
`cert`, `key`, `cacert`, `cacert_dir`. Numbers are read as Triton reads them (C's atoi:
`port=nonexistent` is port 0). Other keys are ignored, as Triton ignores them.

The server does not start without its cache: it connects and PINGs at start-up, and refuses
with Triton's messages (a refused connection, an unknown host, redis's own WRONGPASS or NOAUTH
reply). Once serving, a redis that fails is a miss at lookup and a skipped insertion (logged as
Triton logs it), never a failed request.

Each response is one redis string, `tritium:<the request key in hex>`, holding the packed
entry (`entry.py`); no expiry is set (Triton sets none): redis's own maxmemory policy evicts.

Lookups run on the frontends' event loop, so a redis that stops answering must not hold it:
a `socket_timeout` of 0 (Triton's "forever", the default) waits `DEFAULT_SOCKET_TIMEOUT_S`
here, and after a failed lookup the next ones are misses without asking redis for
`RETRY_AFTER_S` (one call a second, not one per request, meets a stalled redis).
"""

from __future__ import annotations

import logging
import os
import re
import socket
import threading
import time
from typing import Any

from ..errors import TritonError
from ..tensor import Tensor
from .cache import Occupancy, ResponseCache
from .entry import pack, unpack

log = logging.getLogger("tritium.cache")

KEY_PREFIX = b"tritium:"
USERNAME_ENV = "TRITONCACHE_REDIS_USERNAME"
PASSWORD_ENV = "TRITONCACHE_REDIS_PASSWORD"
MISSING_ADDRESS = (
    "Failed to initialize RedisCache, didn't specify address. Must at a minimum specify 'host' "
    "and 'port' in the configuration - e.g. tritonserver --cache-config redis,host=redis "
    "--cache-config redis,port=6379 --model-repository=/models ..."
)
# What a socket_timeout of 0 waits (Triton: forever, on a thread of the request's own).
DEFAULT_SOCKET_TIMEOUT_S = 1.0
# After a failed lookup, how long lookups are misses without a call to redis.
RETRY_AFTER_S = 1.0
_TLS_FILES = {"cert": "ssl_certfile", "key": "ssl_keyfile", "cacert": "ssl_ca_certs",
              "cacert_dir": "ssl_ca_path"}


class RedisCache(ResponseCache):
    """Responses in redis, through a blocking pool of redis-py connections."""

    def __init__(self, client: Any) -> None:
        super().__init__()
        self._client = client
        self._redis_error: type[Exception] = _redis().RedisError
        self._failing = threading.Event()  # a lookup failed: logged once, until one succeeds
        self._retry_at = 0.0  # monotonic time before which lookups skip redis

    @classmethod
    def from_settings(cls, settings: dict[str, str]) -> RedisCache:
        """Connect as `settings` say; TritonError with Triton's message if that fails."""
        if "host" not in settings or "port" not in settings:
            raise TritonError.invalid_arg(MISSING_ADDRESS)
        redis = _redis()
        host, port = settings["host"], _atoi(settings["port"])
        connect_timeout = _seconds(settings.get("connect_timeout", "0"))
        _probe(host, port, connect_timeout)
        options: dict[str, Any] = {}
        if settings.get("tls_enabled") == "true":
            options = {"connection_class": redis.SSLConnection}
            options.update((_TLS_FILES[name], value) for name, value in settings.items()
                           if name in _TLS_FILES)
        if "sni" in settings:
            raise TritonError.invalid_arg(
                "Failed to initialize RedisCache: 'sni' is not supported: the TLS server name "
                "is the 'host'")
        pool = redis.BlockingConnectionPool(
            host=host, port=port, db=_atoi(settings.get("db", "0")),
            username=settings.get("user", os.environ.get(USERNAME_ENV)),
            password=settings.get("password", os.environ.get(PASSWORD_ENV)),
            socket_connect_timeout=connect_timeout,
            socket_timeout=(_seconds(settings.get("socket_timeout", "0"))
                            or DEFAULT_SOCKET_TIMEOUT_S),
            max_connections=max(_atoi(settings.get("pool_size", "1")), 1),
            timeout=_seconds(settings.get("wait_timeout", "1000")),
            # RESP2 as redis-plus-plus speaks it: a password-protected redis then answers PING
            # with NOAUTH (HELLO 3 would be refused with another message). No retries: a
            # failing redis is a miss now, not seconds of backoff on the event loop.
            protocol=2, retry=redis.retry.Retry(redis.backoff.NoBackoff(), 0),
            **options,
        )
        client = redis.Redis(connection_pool=pool)
        try:
            client.ping()
        except redis.RedisError as exc:
            pool.disconnect()
            raise TritonError.internal(
                f"Failed to initialize RedisCache: {_reply_text(exc)}") from None
        log.debug("Successfully connected to Redis")
        return cls(client)

    def _lookup(self, key: bytes) -> list[Tensor] | None:
        name = KEY_PREFIX + key.hex().encode()
        if time.monotonic() < self._retry_at:  # a lookup failed less than a second ago
            return None
        try:
            value = self._client.get(name)
            outputs = unpack(value) if value is not None else None
        except (self._redis_error, TritonError) as exc:
            # Triton's core takes a failed lookup for a miss; said here once per outage.
            self._retry_at = time.monotonic() + RETRY_AFTER_S
            if not self._failing.is_set():
                self._failing.set()
                log.warning("Failed to retrieve key: %s. %s", name.decode(), _reply_text(exc))
            return None
        self._failing.clear()
        return outputs

    def _insert(self, key: bytes, outputs: list[Tensor]) -> None:
        name = KEY_PREFIX + key.hex().encode()
        try:
            self._client.set(name, pack(outputs))
        except self._redis_error as exc:
            log.error("Failed to insert key [%s] into response cache: Failed to insert key: %s. "
                      "%s", name.decode(), name.decode(), _reply_text(exc))

    def _occupancy(self) -> Occupancy:
        """Redis holds the entries, for every server that shares it; none are counted here."""
        return Occupancy()


def _redis() -> Any:
    try:
        import redis
        import redis.backoff
        import redis.retry
    except ImportError:
        raise TritonError.invalid_arg(
            "the 'redis' cache needs redis-py: pip install 'tritium[redis]'") from None
    return redis


def _probe(host: str, port: int, timeout: float | None) -> None:
    """Connect once, so that an unreachable redis is refused with the system's own words
    ("Connection refused", "Name or service not known"), as Triton's client reports them."""
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        raise TritonError.internal(
            f"Failed to initialize RedisCache: Failed to connect to Redis: "
            f"{exc.strerror or exc}") from None


def _reply_text(exc: Exception) -> str:
    """redis's error reply as redis wrote it: redis-py keeps its code (WRONGPASS, NOAUTH...)
    apart from the text."""
    code = getattr(exc, "status_code", None)
    return f"{code} {exc}" if code else str(exc)


def _atoi(text: str) -> int:
    """C's atoi, as Triton reads the numbers: the leading integer, 0 without one."""
    match = re.match(r"\s*[+-]?\d+", text)
    return int(match.group()) if match else 0


def _seconds(milliseconds: str) -> float | None:
    """A timeout in milliseconds; 0 waits forever (None to redis-py)."""
    value = _atoi(milliseconds)
    return value / 1000 if value > 0 else None
