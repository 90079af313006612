"""gRPC message compression: request messages inflated (`grpc-encoding`), responses deflated
(--grpc-infer-response-compression-level).

Counterpart: Triton sets the compression level of its infer responses (ModelInfer and
ModelStreamInfer) on the gRPC server context; gRPC core then picks the algorithm from those the
client accepts (`grpc-accept-encoding`), ranked gzip < deflate: `low` takes the first, `medium`
the middle one, `high` the last (grpc_compression_algorithm_for_level). The response then
carries `grpc-encoding` and each message its compressed flag.

Inflating and deflating are plain functions of their bytes, so that a call can run them on the
bulk thread (`frontend/bulk_work.py`) when the message is large: zlib takes tens of
milliseconds per megabyte at its default level (a 40 MB tensor: 1-2 s) and would make every
other client of the event loop wait that long.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable

import grpc

from .http2 import encode_headers

_RANKING = ("gzip", "deflate")
_COMPRESS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": lambda data: _gzip(data),
    "deflate": zlib.compress,
}
# zlib window bits per grpc-encoding.
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
# The RPCs whose responses the level applies to, as in Triton.
INFER_METHODS = ("/inference.GRPCInferenceService/ModelInfer",
                 "/inference.GRPCInferenceService/ModelStreamInfer")
# A message's 5-byte prefix: compressed flag and length.
PREFIX = struct.Struct(">BI")


class MessageError(Exception):
    """A request message that cannot be read: the call ends with this status."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code = code
        self.details = details


def _gzip(data: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def response_algorithm(level: str, accept_encoding: str | None) -> str | None:
    """The algorithm for a response at `level` to a client accepting `accept_encoding`."""
    if level == "none" or not accept_encoding:
        return None
    accepted = {part.strip() for part in accept_encoding.split(",")}
    supported = [name for name in _RANKING if name in accepted]
    if not supported:
        return None
    index = {"low": 0, "medium": len(supported) // 2, "high": len(supported) - 1}[level]
    return supported[index]


def encoding_header(algorithm: str) -> bytes:
    """The HPACK-encoded `grpc-encoding` response header."""
    return encode_headers([("grpc-encoding", algorithm)])


def compressed_message(algorithm: str, data: bytes) -> tuple[bytes, bytes]:
    """One response message, its payload compressed with `algorithm`: its prefix and
    payload."""
    data = _COMPRESS[algorithm](data)
    return PREFIX.pack(1, len(data)), data


def inflate(encoding: str | None, message: bytes, limit: int) -> bytes:
    """A request message compressed with `encoding` (its grpc-encoding), inflated, never past
    `limit` bytes (a gzip bomb stops there). Raises MessageError with grpc's status for an
    unknown encoding, a message too large once inflated, and one that does not inflate."""
    wbits = _WBITS.get(encoding or "")
    if wbits is None:
        raise MessageError(grpc.StatusCode.UNIMPLEMENTED,
                           f"Compression algorithm '{encoding}' is not supported")
    try:
        inflater = zlib.decompressobj(wbits)
        data = inflater.decompress(message, limit + 1)
        if len(data) > limit:
            raise MessageError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                               f"Received message larger than max (more than {limit} bytes "
                               f"after decompression vs. {limit})")
        if not inflater.eof:
            raise zlib.error("incomplete or truncated stream")
        return data
    except zlib.error:
        raise MessageError(grpc.StatusCode.INTERNAL,
                           "Failed to decompress the request message") from None


__all__ = ["INFER_METHODS", "PREFIX", "MessageError", "compressed_message", "encoding_header",
           "inflate", "response_algorithm"]
