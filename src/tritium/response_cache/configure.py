"""The cache `--cache-config` asks for: its settings, by cache name, to a cache."""

from __future__ import annotations

from ..errors import TritonError
from .cache import ResponseCache
from .local import LocalCache


def from_config(config: dict[str, dict[str, str]]) -> ResponseCache | None:
    """The one cache `config` names (None without one). Several caches are refused before any
    is looked at, as Triton's server does; redis-py is imported only for a redis cache."""
    if not config:
        return None
    if len(config) > 1:
        raise TritonError.invalid_arg(
            "found multiple cache configurations, but only a single cache is currently supported"
        )
    ((name, settings),) = config.items()
    if name == "local":
        return LocalCache.from_settings(settings)
    if name == "redis":
        from .redis_cache import RedisCache

        return RedisCache.from_settings(settings)
    raise TritonError.invalid_arg(
        f"unable to find cache '{name}': Tritium provides the 'local' and 'redis' caches"
    )
