"""Protobuf's wire format, the little of it the gRPC frontend writes and scans by hand: varints
and length-delimited fields (https://protobuf.dev/programming-guides/encoding/). The messages
themselves are protobuf's (`tritonclient.grpc.service_pb2`); these serve the parts kept out of
message objects for speed (raw tensor contents, the small fixed parts of responses).
"""

from __future__ import annotations

# ModelInferRequests at least this big are scanned by hand so raw tensors stay views of the
# message; below it protobuf's C parser is faster than the Python scan and the copies are
# negligible.
SCAN_THRESHOLD = 48 * 1024


def varint(value: int) -> bytes:
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    end = len(data)
    while pos < end:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            break
    raise ValueError("malformed varint in ModelInferRequest")


def string_field(tag: bytes, text: str) -> bytes:
    """A string field as protobuf writes it; proto3 leaves an empty one out."""
    if not text:
        return b""
    data = text.encode()
    return tag + varint(len(data)) + data
