"""A cached response as bytes: the entry a cache that lives outside the process stores.

The layout is the one Triton's core packs a response into (cache_entry.cc), all little-endian:
the output count (4 bytes), then per output the length of what follows for it (8), its name,
datatype and shape each after a 4-byte length (the shape as 8-byte dimensions), and its data
after an 8-byte length (BYTES data in its length-prefixed wire form). `entry_size` is the size
of that packing without making it: the local cache counts every response in these bytes.
"""

from __future__ import annotations

import struct

import numpy as np

from ..errors import TritonError
from ..tensor import Tensor, bytes_from_wire, numpy_dtype, serialize_bytes

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


def entry_size(outputs: list[Tensor]) -> int:
    """The bytes `pack(outputs)` takes."""
    size = _U32.size
    for tensor in outputs:
        size += (_U64.size + _U32.size + len(tensor.name.encode()) + _U32.size
                 + len(tensor.datatype) + _U32.size + 8 * len(tensor.shape) + _U64.size
                 + _data_size(tensor))
    return size


def pack(outputs: list[Tensor]) -> bytes:
    """`outputs` (names, datatypes, shapes, data) as one entry."""
    parts = [_U32.pack(len(outputs))]
    for tensor in outputs:
        name = tensor.name.encode()
        data = _data(tensor)
        body = b"".join((
            _U32.pack(len(name)), name,
            _U32.pack(len(tensor.datatype)), tensor.datatype.encode(),
            _U32.pack(len(tensor.shape)), struct.pack(f"<{len(tensor.shape)}q", *tensor.shape),
            _U64.pack(len(data)), data,
        ))
        parts += (_U64.pack(len(body)), body)
    return b"".join(parts)


def unpack(entry: bytes) -> list[Tensor]:
    """The outputs `pack` made `entry` of. Raises TritonError for bytes that are not an entry
    (another program's value under the key): the caller treats it as a miss."""
    try:
        view = memoryview(entry)
        (count,), offset = _U32.unpack_from(view), _U32.size
        outputs = []
        for _ in range(count):
            offset += _U64.size
            name, offset = _text(view, offset)
            datatype, offset = _text(view, offset)
            (ndims,) = _U32.unpack_from(view, offset)
            shape = tuple(struct.unpack_from(f"<{ndims}q", view, offset + _U32.size))
            offset += _U32.size + 8 * ndims
            (length,) = _U64.unpack_from(view, offset)
            offset += _U64.size
            data = view[offset:offset + length]
            offset += length
            if datatype == "BYTES":
                array = bytes_from_wire(data, None, name, "", "")
            else:
                array = np.frombuffer(data, dtype=numpy_dtype(datatype)).copy()
            outputs.append(Tensor(name, datatype, shape, array.reshape(shape)))
    except (struct.error, ValueError, KeyError, TritonError) as exc:
        raise TritonError.internal(f"not a response cache entry: {exc}") from None
    if offset != len(entry):
        raise TritonError.internal("not a response cache entry: trailing bytes")
    return outputs


def _text(view: memoryview, offset: int) -> tuple[str, int]:
    (length,) = _U32.unpack_from(view, offset)
    start = offset + _U32.size
    return bytes(view[start:start + length]).decode(), start + length


def _data(tensor: Tensor) -> bytes:
    if tensor.datatype == "BYTES":
        return serialize_bytes(tensor.data)
    return np.ascontiguousarray(tensor.data).tobytes()


def _data_size(tensor: Tensor) -> int:
    if tensor.datatype == "BYTES":
        return len(serialize_bytes(tensor.data))
    return int(tensor.data.nbytes)
