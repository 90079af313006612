"""BYTES tensors in Triton's wire form (each element a 4-byte little-endian length, then its
bytes), as Triton's resource file (de)serialises them for model code."""

from __future__ import annotations

import struct

import numpy as np


def serialize_byte_tensor(input_tensor: np.ndarray) -> bytes | tuple | None:
    """Serialise an object/bytes array into Triton's BYTES wire form (C order).

    Each element becomes a 4-byte little-endian length followed by its bytes; ``bytes``
    elements are taken as they are and anything else as ``str(x)`` in UTF-8. Returns ``()``
    for an empty array and None for other dtypes, as Triton's own helper does.
    """
    if input_tensor.size == 0:
        return ()
    if input_tensor.dtype == np.object_:
        items = [
            x if type(x) is bytes else str(x).encode("utf-8")
            for x in input_tensor.flat
        ]
    elif input_tensor.dtype.type == np.bytes_:
        items = list(input_tensor.flat)
    else:
        return None
    parts = []
    for item in items:
        parts.append(struct.pack("<I", len(item)))
        parts.append(item)
    return b"".join(parts)


def deserialize_bytes_tensor(encoded_tensor: bytes | memoryview) -> np.ndarray:
    """Parse Triton's BYTES wire form into a 1-D object array of ``bytes``."""
    view = memoryview(encoded_tensor).cast("B")
    items = []
    offset = 0
    while offset < len(view):
        (length,) = struct.unpack_from("<I", view, offset)
        offset += 4
        items.append(bytes(view[offset : offset + length]))
        offset += length
    return np.array(items, dtype=np.object_)
