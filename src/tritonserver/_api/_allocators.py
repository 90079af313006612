"""``tritonserver._api._allocators``: the output memory allocators."""

from tritium.inprocess.allocators import MemoryAllocator, MemoryBuffer, default_memory_allocators

__all__ = ["MemoryAllocator", "MemoryBuffer", "default_memory_allocators"]
