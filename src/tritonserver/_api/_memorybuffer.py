"""``tritonserver._api._memorybuffer``: memory buffers and their memory types."""

from tritium.inprocess.allocators import MemoryBuffer
from tritium.inprocess.enums import MemoryType

__all__ = ["MemoryBuffer", "MemoryType"]
