"""Triton's shared-memory extension, as far as it goes yet: no region can be registered.

Both frontends let a tensor name a `shared_memory_region` parameter; until the registration
calls exist, every region named is unknown, and Triton answers that with NOT_FOUND.
"""

from __future__ import annotations

from ..errors import TritonError


def unknown_region(region: object) -> TritonError:
    """The error for a tensor that names a region no client registered."""
    return TritonError.not_found(f"Unable to find shared memory region: '{region}'")
