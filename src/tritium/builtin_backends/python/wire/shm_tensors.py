"""Tensors in shared memory: how one message's tensors are packed into, and read from, a block.

Tensor bytes never travel in control messages: each message that carries tensors first reserves
one *block* for all of them, either in the sender's ring (`shm_ring.Ring`) or, when the ring
has no room, in a one-off segment whose file descriptor rides with the message (SCM_RIGHTS).
A tensor in a message is `(name, datatype, shape, offset, nbytes)`, its bytes at `offset`
within the message's block. BYTES tensors travel in Triton's serialised form (4-byte length
before each element).

Both sides import this module, and the stub may run under another interpreter (an execution
environment) that has numpy but not the server's dependencies: it cannot use `tritium.tensor`
(which needs protobuf), hence the numpy-only `tritium.datatypes` and its own BYTES codec.
"""

from __future__ import annotations

import os
import struct
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ....datatypes import NUMPY_DTYPES
from .shm_ring import Ring, create_shared_fd, map_fd

ALIGN = 64
_U32 = struct.Struct("<I")
# Above this size a tensor is copied into shared memory straight from its buffer; below it,
# through bytes (fewer Python-level steps).
_DIRECT_COPY_BYTES = 1 << 16


def serialize_bytes(array: np.ndarray) -> bytes:
    """BYTES tensor -> Triton's length-prefixed form (row-major order)."""
    parts: list[bytes] = []
    append = parts.append
    pack = _U32.pack
    for item in array.reshape(-1):
        if isinstance(item, str):
            item = item.encode("utf-8")
        elif not isinstance(item, (bytes, bytearray, memoryview)):
            item = bytes(item) if isinstance(item, np.bytes_) else str(item).encode("utf-8")
        append(pack(len(item)))
        append(bytes(item))
    return b"".join(parts)


def deserialize_bytes(buffer: Any, count: int | None = None) -> np.ndarray:
    """Triton's length-prefixed form -> 1-D object array of bytes."""
    view = memoryview(buffer)
    items: list[bytes] = []
    offset, size = 0, len(view)
    unpack = _U32.unpack_from
    while offset + 4 <= size and (count is None or len(items) < count):
        (length,) = unpack(view, offset)
        offset += 4
        items.append(bytes(view[offset : offset + length]))
        offset += length
    out = np.empty(len(items), dtype=np.object_)
    out[:] = items
    return out


class Block:
    """Where one message's tensors live while the receiver uses them."""

    __slots__ = ("buffer", "base", "_release", "shared")

    def __init__(self, buffer: Any, base: int, release: Callable[[], None] | None,
                 shared: bool) -> None:
        self.buffer = buffer
        self.base = base
        self._release = release
        # True when the bytes are in a ring, to be reused once released; False for a one-off
        # segment, which lives as long as the arrays viewing it.
        self.shared = shared

    def release(self) -> None:
        """Give the block's ring space back (once; a one-off segment has nothing to give)."""
        release, self._release = self._release, None
        if release is not None:
            release()

    def array(self, datatype: str, shape: tuple, offset: int, nbytes: int,
              copy: bool) -> np.ndarray:
        """One tensor of the block: a view, or with `copy` a copy of ring bytes (which are
        reused once the block is released)."""
        start = self.base + offset
        if datatype == "BYTES":
            count = 1
            for d in shape:
                count *= d
            flat = deserialize_bytes(memoryview(self.buffer)[start : start + nbytes], count)
            return flat.reshape(shape)
        dtype = NUMPY_DTYPES[datatype]
        if not nbytes:
            return np.empty(shape, dtype)
        array = np.ndarray(shape, dtype, self.buffer, start)
        return array.copy() if copy and self.shared else array


class TensorWriter:
    """Packs the tensors of one outgoing message into one block: in `ring` when it has room,
    else in a one-off segment. Without a ring (a channel of a process forked from a stub,
    which must not produce into the rings the stub produces into), always a segment."""

    def __init__(self, ring: Ring | None, name: str) -> None:
        self.ring = ring
        self.name = name

    def pack(self, tensors: Sequence[tuple[str, str, np.ndarray]]) -> tuple[list, Any, list[int]]:
        """[(name, datatype, array)] -> (descriptors, block descriptor, fds to send)."""
        if not tensors:
            return [], None, []
        staged = []
        total = 0
        for name, datatype, array in tensors:
            if datatype == "BYTES":
                data: Any = serialize_bytes(array)
                nbytes = len(data)
            else:
                data = array
                nbytes = array.nbytes
            staged.append((name, datatype, array.shape, data, nbytes))
            total += (nbytes + ALIGN - 1) & ~(ALIGN - 1)
        ring = self.ring
        reserved = (0, 0, Ring.HEADER) if not total else (
            ring.alloc(total) if ring is not None else None)
        fd = -1
        if reserved is not None:
            buffer = ring.buffer if ring is not None else memoryview(b"")
            base = reserved[2]
            block: Any = reserved
            fds: list[int] = []
        else:
            fd = create_shared_fd(total, self.name)
            segment = map_fd(fd, total)
            buffer = memoryview(segment)
            base = 0
            block = -1
            fds = [fd]
        descriptors = []
        at = base
        try:
            for name, datatype, shape, data, nbytes in staged:
                if nbytes:
                    if datatype == "BYTES":
                        buffer[at : at + nbytes] = data
                    elif nbytes <= _DIRECT_COPY_BYTES or not data.flags.c_contiguous:
                        buffer[at : at + nbytes] = data.tobytes()
                    else:
                        buffer[at : at + nbytes] = data.data.cast("B")
                descriptors.append((name, datatype, shape, at - base, nbytes))
                at += (nbytes + ALIGN - 1) & ~(ALIGN - 1)
        finally:
            if fd >= 0:
                buffer.release()
                segment.close()
        return descriptors, block, fds


def open_block(block: Any, ring: Ring | None, fds: deque) -> Block | None:
    """The receiver's view of a message's block (None when the message has no tensors).
    `ring` is None on a channel whose sender has no ring (see `TensorWriter`)."""
    if block is None:
        return None
    if block == -1:
        fd = fds.popleft()
        try:
            size = os.fstat(fd).st_size
            segment = map_fd(fd, size) if size else b""
        finally:
            os.close(fd)
        # numpy views keep the mapping alive; it goes when the last one does.
        return Block(segment, 0, None, False)
    start, end, base = block
    if start == end:
        return Block(b"", 0, None, True)  # only empty tensors
    if ring is None:
        raise ValueError("a block in a ring on a channel that has none")
    return Block(ring.mapping, base, lambda: ring.release(start, end), True)


def read_tensors(descriptors: Sequence[tuple], block: Block | None, copy: bool) -> list:
    """[(name, datatype, array)] from a message's descriptors."""
    if not descriptors:
        return []
    assert block is not None
    return [(name, datatype, block.array(datatype, shape, offset, nbytes, copy))
            for name, datatype, shape, offset, nbytes in descriptors]
