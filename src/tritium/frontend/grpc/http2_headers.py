"""The header blocks of one HTTP/2 connection (RFC 9113 4.3, RFC 7541): HEADERS and
CONTINUATION frames gathered into blocks, bounded against the CONTINUATION flood, and decoded
with the `hpack` library's decoder (python-hyper).

A block is decoded once per connection and its result reused while the dynamic table stays as
it was (what clients send for repeated calls: indexed fields): the table counts its insertions
and resizes, and any change empties the cache, since an indexed field means what the table
holds at that moment. `http2.H2Connection` hands its HEADERS and CONTINUATION frames here.
"""

from __future__ import annotations

import logging

import hpack
import hpack.table

from .http2_frames import (
    COMPRESSION_ERROR,
    END_HEADERS,
    END_STREAM,
    ENHANCE_YOUR_CALM,
    PADDED,
    PRIORITY_FLAG,
    PROTOCOL_ERROR,
    H2ConnectionError,
    unpad,
)
from .http2_limits import H2Limits, RateLimit

log = logging.getLogger("tritium.frontend.http2")

# Header blocks whose decoding is remembered per connection.
HEADER_CACHE = 64

# A complete header block: (stream id, block, END_STREAM).
Block = tuple[int, bytes, bool]


class CountingTable(hpack.table.HeaderTable):
    """hpack's dynamic table, counting every change (insertions and size updates, the only
    ways entries come and go): a decoded block may be reused only while the count stands."""

    def __init__(self) -> None:
        super().__init__()
        self.generation = 0

    def add(self, name: bytes, value: bytes) -> None:
        self.generation += 1
        super().add(name, value)

    @property
    def maxsize(self) -> int:
        return self._maxsize

    @maxsize.setter
    def maxsize(self, newmax: int) -> None:
        self.generation += 1
        hpack.table.HeaderTable.maxsize.fset(self, newmax)  # type: ignore[attr-defined]


class HeaderBlocks:
    """Gathers and decodes one connection's header blocks; faults raise H2ConnectionError."""

    def __init__(self, limits: H2Limits, empty_frames: RateLimit) -> None:
        self._limits = limits
        self._empty_frames = empty_frames
        self._decoder = hpack.Decoder(max_header_list_size=2 * limits.max_header_list_size)
        self._decoder.header_table = self._table = CountingTable()
        self._decoder.max_allowed_table_size = 65536
        self.cache: dict[bytes, list[tuple[str, str]]] = {}
        self._cache_generation = 0
        # (stream id, block so far, END_STREAM, CONTINUATION frames so far)
        self.continuing: tuple[int, bytearray, bool, int] | None = None

    def headers(self, flags: int, stream_id: int, payload: bytes) -> Block | None:
        """A HEADERS frame: its block, or None while CONTINUATION frames are to come."""
        if stream_id == 0:
            raise H2ConnectionError(PROTOCOL_ERROR)
        if flags & PADDED:
            payload = unpad(payload)
        if flags & PRIORITY_FLAG:
            payload = payload[5:]
        if not flags & END_HEADERS:
            self._check(len(payload), 0)
            self.continuing = (stream_id, bytearray(payload), bool(flags & END_STREAM), 0)
            return None
        return stream_id, payload, bool(flags & END_STREAM)

    def continuation(self, flags: int, stream_id: int, payload: bytes) -> Block | None:
        """A CONTINUATION frame: the block it completes, or None while more are to come."""
        if self.continuing is None or self.continuing[0] != stream_id:
            raise H2ConnectionError(PROTOCOL_ERROR)
        _, block, ended, count = self.continuing
        block.extend(payload)
        self._check(len(block), count + 1)
        if not payload and not flags & END_HEADERS and not self._empty_frames.take():
            raise H2ConnectionError(ENHANCE_YOUR_CALM)
        self.continuing = (stream_id, block, ended, count + 1)
        if not flags & END_HEADERS:
            return None
        self.continuing = None
        return stream_id, bytes(block), ended

    def _check(self, size: int, continuations: int) -> None:
        """A header block being gathered may not outgrow twice the advertised header-list size
        (what it decodes to is never smaller than the block, bar Huffman's 5/8) nor take more
        than its share of CONTINUATION frames: the CONTINUATION flood ends here."""
        limits = self._limits
        if size > 2 * limits.max_header_list_size or continuations > limits.max_continuations:
            raise H2ConnectionError(ENHANCE_YOUR_CALM)

    def decode(self, block: bytes) -> list[tuple[str, str]]:
        """A block's header fields, names and values as latin-1 text."""
        table = self._table
        if table.generation == self._cache_generation:
            cached = self.cache.get(block)
            if cached is not None:
                return cached
        try:
            headers = [(bytes(n).decode("latin-1"), bytes(v).decode("latin-1"))
                       for n, v in self._decoder.decode(block, raw=True)]
        except hpack.OversizedHeaderListError:
            raise H2ConnectionError(ENHANCE_YOUR_CALM) from None
        except Exception as exc:  # hpack.HPACKError and friends: the connection is unusable
            log.debug("HTTP/2: header block does not decode: %s", exc)
            raise H2ConnectionError(COMPRESSION_ERROR) from None
        if table.generation != self._cache_generation:
            # The table changed: every remembered decoding may mean something else now.
            self.cache.clear()
            self._cache_generation = table.generation
        elif len(self.cache) < HEADER_CACHE:
            self.cache[block] = headers
        return headers
