"""A call's status details on the wire: the `grpc-message` trailer, percent-encoded as gRPC
specifies and bounded in length.

Bounded because gRPC clients refuse trailers past their metadata limit (8 KiB by default, 16
KiB at most) and then report RESOURCE_EXHAUSTED instead of the call's status: Triton's message
for a request of 100,000 inputs listed every name (1.2 MB). A longer message is cut between
characters and ends with "...".
"""

from __future__ import annotations

# The longest grpc-message sent, percent-encoded.
MAX_STATUS_MESSAGE = 4096


def status_message(details: str) -> str:
    """A status's details as its grpc-message: percent-encoded, cut between characters to
    MAX_STATUS_MESSAGE with "..." when longer."""
    encoded = percent_encode(details)
    if len(encoded) <= MAX_STATUS_MESSAGE:
        return encoded
    kept: list[str] = []
    room = MAX_STATUS_MESSAGE - 3
    for character in details:  # each encodes to 1 to 12 characters (4 bytes as %XX)
        piece = percent_encode(character)
        if len(piece) > room:
            break
        kept.append(piece)
        room -= len(piece)
    return "".join(kept) + "..."


def percent_encode(text: str) -> str:
    """grpc-message's encoding: bytes outside printable ASCII, and '%', as %XX."""
    out = []
    for byte in text.encode("utf-8"):
        if 0x20 <= byte <= 0x7E and byte != 0x25:
            out.append(chr(byte))
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


__all__ = ["MAX_STATUS_MESSAGE", "percent_encode", "status_message"]
