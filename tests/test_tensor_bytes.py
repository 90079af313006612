"""BYTES tensors on the wire: a fixed-width numpy bytes array ('S') is serialised by numpy when
each element fills its width, and must give exactly what the element loop gives (numpy reads an
element without its trailing NULs, which the fast path must not lose)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from tritium.tensor import bytes_from_wire, serialize_bytes


def _wire(elements: list[bytes]) -> bytes:
    """Triton's wire form, written out: each element's 4-byte little-endian length, then it."""
    return b"".join(struct.pack("<I", len(e)) + e for e in elements)


@pytest.mark.parametrize("elements", [
    [b"ab", b"cd", b"ef"],  # every element fills the width
    [b"ab", b"c", b"de"],  # one shorter: numpy pads it with a NUL
    [b"a\x00", b"bc"],  # a trailing NUL of the element's own
    [b"\x00b", b"c\x00d"[:2]],  # NULs inside
    [b"", b""],  # width 1, all empty
    [b"\xff" * 300] * 5,
])
def test_a_fixed_width_array_serialises_as_its_elements_read(elements: list[bytes]) -> None:
    array = np.array(elements, dtype=np.bytes_)
    # What a user reading the array gets, element by element, is what goes on the wire.
    assert serialize_bytes(array) == _wire([bytes(e) for e in array])
    assert serialize_bytes(array) == serialize_bytes(array.astype(np.object_))


def test_a_fixed_width_array_keeps_row_major_order_and_round_trips() -> None:
    array = np.array([[b"%03d" % i for i in range(j, j + 4)] for j in range(0, 12, 4)])
    for layout in (array, np.asfortranarray(array), array.T, array[:, ::2]):
        wire = serialize_bytes(layout)
        assert wire == _wire([bytes(e) for e in layout.reshape(-1)])
        decoded = bytes_from_wire(wire, layout.size, "INPUT0", "m", "")
        assert decoded.tolist() == [bytes(e) for e in layout.reshape(-1)]


def test_an_empty_fixed_width_array_serialises_to_nothing() -> None:
    assert serialize_bytes(np.array([], dtype="S4")) == b""
    assert serialize_bytes(np.zeros((2, 0), dtype="S4")) == b""
