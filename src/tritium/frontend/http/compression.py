"""HTTP content coding as Triton's HTTP frontend does it: gzip and deflate, both ways.

A request body may arrive compressed (Content-Encoding); a response is compressed when the
client's Accept-Encoding prefers gzip or deflate over identity.
"""

from __future__ import annotations

import zlib
from typing import Any

from ...errors import TritonError


def decompress(body: bytes, encoding: str, limit: int) -> bytes:
    """Undo a request's Content-Encoding (Triton accepts gzip and deflate); the result may
    not be larger than `limit` bytes (the body size limit applies after decompression too)."""
    try:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS)
        data = inflater.decompress(body, limit + 1)
        if len(data) > limit:
            raise TritonError.invalid_arg(
                f"Decompressed request body size exceeds the maximum allowed value of {limit} "
                "bytes. Use --http-max-input-size to increase the limit."
            )
        if not inflater.eof:
            raise zlib.error("incomplete or truncated stream")
        return data
    except zlib.error as exc:
        raise TritonError.invalid_arg(f"failed to decompress the request body: {exc}") from None


def accepted_encoding(accept_encoding: str) -> str:
    """Triton's choice among identity/gzip/deflate from an Accept-Encoding header."""
    chosen, weight = "identity", 0.0
    for part in accept_encoding.split(","):
        start = len(part) - len(part.lstrip(" "))
        if start == len(part):
            continue
        weight_pos = part.find(";q=")
        if weight_pos != -1 and start >= weight_pos:
            continue
        kind = part[start:] if weight_pos == -1 else part[start:weight_pos]
        kind_weight = 1.0
        if weight_pos != -1:
            try:
                kind_weight = float(part[weight_pos + 3 :])
            except ValueError:
                continue
        if kind in ("identity", "deflate", "gzip") and kind_weight > weight:
            chosen, weight = kind, kind_weight
    return chosen


def compress(parts: list[Any], encoding: str) -> bytes:
    """A response body, the buffers `parts` one after the other, in the chosen encoding
    ("gzip" or "deflate"); the parts are not joined first."""
    if encoding == "gzip":
        compressor = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)
    else:
        compressor = zlib.compressobj()
    return b"".join([*map(compressor.compress, parts), compressor.flush()])
