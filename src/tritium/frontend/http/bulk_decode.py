"""Which infer bodies are decoded off the event loop (`frontend/bulk_work.py`), one at a time.

Decoding a JSON body of tens of megabytes, or inflating a small gzip body to one, takes long
enough that on the event loop every other client would wait for it (a 60 MB JSON body: 1-6 s);
so does decoding a BYTES tensor of millions of short elements, binary or JSON (about half a
microsecond each). Such bodies are decoded on the bulk thread, and `json_spans` reads their
tensor data in slices so that the GIL changes hands meanwhile; the request then goes on on the
loop.
"""

from __future__ import annotations

from collections.abc import Callable

from ...errors import TritonError
from ..bulk_work import BYTES_BULK_SIZE
from .json_spans import BULK
from .request import parse_header_length


def is_bulky(body: bytes, content_encoding: str | None, header_length_text: str | None,
             header_length: Callable[[str | None, int], int] = parse_header_length) -> bool:
    """Whether decoding a body belongs off the loop: it is compressed (a few kilobytes may
    inflate to the size limit; compressed requests are rare), its JSON part is large, or it is
    large enough to hold a BYTES tensor of many elements and its JSON may name that datatype
    (it does, or it has escapes that may spell it). A body shorter than that is decided by its
    length alone; a raw body (no JSON) holds at most one BYTES element."""
    if content_encoding == "gzip" or content_encoding == "deflate":
        return True
    if len(body) < BYTES_BULK_SIZE:
        return False
    try:
        length = header_length(header_length_text, len(body))
    except TritonError:  # refused by the decoder at once
        return False
    return length >= BULK or body.find(b"BYTES", 0, length) != -1 \
        or body.find(b"\\u", 0, length) != -1

