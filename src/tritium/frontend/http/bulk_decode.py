"""Which infer bodies are decoded, and which answers made, off the event loop
(`frontend/bulk_work.py`), one at a time.

Decoding a JSON body of tens of megabytes, or inflating a small gzip body to one, takes long
enough that on the event loop every other client would wait for it (a 60 MB JSON body: 1-6 s);
so does decoding a BYTES tensor of millions of short elements, binary or JSON (about half a
microsecond each). Such bodies are decoded on the bulk thread, and `json_spans` reads their
tensor data in slices so that the GIL changes hands meanwhile; the request then goes on on the
loop. Answers alike: encoding a BYTES output of many elements, writing a large output in JSON
(4 million FP32 values: 0.25 s) and deflating a large answer (40 MB: 1-2 s) are done there,
then the answer is written from the loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...errors import TritonError
from ...tensor import Tensor
from ..bulk_work import BYTES_BULK_SIZE, DEFLATE_BULK_SIZE, bulky_bytes
from .json_data import LARGE_OUTPUT
from .json_spans import BULK
from .request import OutputPlan, parse_header_length


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


def is_bulky_answer(outputs: Sequence[Tensor], plan: OutputPlan, encoding: str) -> bool:
    """Whether making the answer belongs off the loop: an output is BYTES of many elements,
    or is written in JSON and has `LARGE_OUTPUT` elements or more, or the answer is to be
    compressed (`encoding` is not identity) and its outputs hold `DEFLATE_BULK_SIZE` bytes or
    more."""
    if bulky_bytes(outputs):
        return True
    size = 0
    for tensor in outputs:
        data = tensor.data
        size += getattr(data, "nbytes", 0)
        if getattr(data, "size", 0) >= LARGE_OUTPUT and _in_json(plan, tensor.name):
            return True
    return encoding != "identity" and size >= DEFLATE_BULK_SIZE


def _in_json(plan: OutputPlan, name: str) -> bool:
    """Whether the answer writes output `name`'s data in JSON (as `response` decides)."""
    if not plan.requested:
        return not plan.default_binary
    choice = plan.requested.get(name)
    return choice is not None and not choice[0] and not choice[1]
