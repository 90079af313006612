"""The response cache (`--cache-config`, `response_cache { enable: true }`): Triton's "local"
LRU in the process (`local.py`) or Triton's "redis" cache, shared by every server that names
the same redis (`redis_cache.py`), behind one interface (`cache.py`); models use it through
`ModelResponseCache` (`model_cache.py`)."""

from __future__ import annotations

from .cache import CacheSnapshot, ResponseCache
from .configure import from_config
from .model_cache import ModelResponseCache

__all__ = ["CacheSnapshot", "ModelResponseCache", "ResponseCache", "from_config"]
