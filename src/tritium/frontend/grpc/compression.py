"""gRPC response compression (--grpc-infer-response-compression-level).

Counterpart: Triton sets the compression level of its infer responses (ModelInfer and
ModelStreamInfer) on the gRPC server context; gRPC core then picks the algorithm from those the
client accepts (`grpc-accept-encoding`), ranked gzip < deflate: `low` takes the first, `medium`
the middle one, `high` the last (grpc_compression_algorithm_for_level). The response then
carries `grpc-encoding` and each message its compressed flag.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

from .http2 import encode_headers

_RANKING = ("gzip", "deflate")
_COMPRESS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": lambda data: _gzip(data),
    "deflate": zlib.compress,
}
# The RPCs whose responses the level applies to, as in Triton.
INFER_METHODS = ("/inference.GRPCInferenceService/ModelInfer",
                 "/inference.GRPCInferenceService/ModelStreamInfer")


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


def compress(algorithm: str, data: bytes) -> bytes:
    return _COMPRESS[algorithm](data)


__all__ = ["INFER_METHODS", "compress", "encoding_header", "response_algorithm"]
