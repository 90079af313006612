"""Large JSON request headers: `data` arrays cut out and read in slices.

A JSON request of tens of megabytes is almost all tensor data. Read whole (orjson, then a
Python list per input), a 60 MB header held the GIL for 1-6 s and grew the server by ~600 MB:
every other client waited that long. Here the document is read without its large `data` arrays
(each left as a `JsonSpan` of its text), and an array is read once its tensor's datatype is
known, a slice of about `SLICE` bytes at a time straight into the tensor (orjson per slice, so
the grammar is still JSON's; the GIL changes hands between slices). A numeric array is cut at
its commas; an array of strings (of an infer request) where `json_cuts` finds its elements
part, outside the strings (4 million strings, 20 MB, read whole held the GIL for 0.26 s).

What the cut cannot place with certainty (a `data` array that is not an input's, strings or
objects in it, a slice that does not parse) is read the ordinary way, so errors and leniency
are `load_json`'s: the fast path never accepts what the whole-document reader refuses. (One
difference: a document both malformed in a late slice and mistyped in an earlier one is
refused for the type, where Triton names the syntax.)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from itertools import chain, pairwise
from typing import Any

import numpy as np
import orjson

from ...errors import TritonError
from ..extensions.json_codec import load_json
from .json_cuts import ArrayCuts, array_cuts

# Headers at least this long are cut; arrays at least `_MIN_SPAN` long are cut out of them.
BULK = 1 << 20
_MIN_SPAN = 64 * 1024
SLICE = 1 << 20

_KEY = b'"data"'
_BRACKETS_TO_SPACES = bytes.maketrans(b"[]", b"  ")
_WHITESPACE = b" \t\n\r"
# With the brackets gone, `[1[,2]]` and `[[1,]2]` would read as `1,2`: a comma or a closing
# bracket right after an opening one, or a closing bracket right after a comma, is left to the
# ordinary reader (`[]` is JSON, but rare in tensor data).
_MISPLACED = (b"[,", b",]", b"[]")
_PLACEHOLDER = "\x01tritium-span:"


class JsonSpan:
    """An input's `data` array, still text: `slices` reads it when its datatype is known."""

    __slots__ = ("header", "start", "end", "cuts")

    def __init__(self, header: bytes, start: int, end: int,
                 cuts: ArrayCuts | None = None) -> None:
        self.header = header  # the whole header, for the ordinary reader's verdict
        self.start = start  # the array's `[`
        self.end = end  # one past its `]`
        self.cuts = cuts  # where an array of strings parts (None: a numeric array)

    def slices(self) -> Iterator[list[Any]]:
        """The array's leaves, flattened (Triton accepts any nesting whose leaves fill the
        shape), a slice at a time. Text a slice cannot take is read whole instead, the rest of
        its leaves following; text that is not JSON raises load_json's error."""
        if self.cuts is not None:
            yield from self._cut_slices(self.cuts)
            return
        header, end = self.header, self.end
        position, done = self.start, 0
        while position < end:
            stop = header.find(b",", position + SLICE, end)
            if stop == -1:
                stop = end
            text = header[position:stop]
            values = None if _misplaced(header[max(self.start, position - 1):stop + 1]) \
                else _read_slice(text)
            if values is None or (not values and (position != self.start or stop != end)):
                yield self._whole()[done:]
                return
            yield values
            done += len(values)
            position = stop + 1
            time.sleep(0)  # the event loop's thread may take the GIL between slices

    def _cut_slices(self, cuts: ArrayCuts) -> Iterator[list[Any]]:
        """The leaves of an array of strings, a slice between two of its cuts at a time: each
        read by orjson, so a text that is not JSON (or that the cuts misread) fails a slice
        and is read whole instead."""
        inner_start, inner_end = cuts.inner
        points = [inner_start - 1, *cuts.cuts, inner_end]
        done = 0
        for before, after in pairwise(points):
            try:
                values = orjson.loads(b"[" + self.header[before + 1:after] + b"]")
            except orjson.JSONDecodeError:
                values = None
            if values is None or (not values and len(points) > 2):
                yield self._whole()[done:]
                return
            flat = leaves(values)[0]
            yield flat
            done += len(flat)
            time.sleep(0)  # the event loop's thread may take the GIL between slices

    def flat_count(self) -> int | None:
        """The number of elements of a flat array (None for a nested one), counted without
        reading them (its commas); the reader of its slices checks the count it meets."""
        if self.header.count(b"[", self.start, self.end) != 1:
            return None
        return self.header.count(b",", self.start, self.end) + 1

    def read(self) -> list[Any]:
        """The array read the ordinary way, nesting kept: valid JSON the slices do not take
        (`[[], [1]]`, integers past 64 bits), or else the whole document's error."""
        text = self.header[self.start:self.end]
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
        try:
            return load_json(text)
        except TritonError:
            load_json(self.header)  # the document's own error, at its own offset
            raise

    def _whole(self) -> list[Any]:
        return leaves(self.read())[0]


def _misplaced(text: bytes) -> bool:
    """Whether a bracket in `text` (a slice and the commas either side) sits where removing it
    could make a malformed array read as a well-formed list."""
    if b"[" not in text and b"]" not in text:  # the middle of a flat array
        return False
    compact = text.translate(None, _WHITESPACE)
    return any(pattern in compact for pattern in _MISPLACED)


def _read_slice(text: bytes) -> list[Any] | None:
    try:
        return orjson.loads(b"[" + text.translate(_BRACKETS_TO_SPACES) + b"]")
    except orjson.JSONDecodeError:
        return None


def leaves(data: list[Any]) -> tuple[list[Any], set[type]]:
    """Flatten nested JSON lists (any nesting, as Triton accepts) and the leaves' types."""
    flat = data
    while True:
        types = set(map(type, flat))
        if list not in types:
            return flat, types
        flat = list(chain.from_iterable(x if type(x) is list else (x,) for x in flat))


def load_request_json(header: bytes) -> Any:
    """The infer request's JSON document; in a large one, each input's large numeric `data`
    array is a `JsonSpan` (read later, in slices)."""
    if len(header) < BULK:
        return load_json(header)
    return _load_cut(header, _find_spans(header, [_KEY], strings=True), _place_data)


def load_generate_json(body: bytes, inputs: Iterable[str]) -> Any:
    """The generate request's JSON document; in a large one, each large numeric array given
    as an input (a member named after it, at the top or in `parameters`) is a `JsonSpan`."""
    if len(body) < BULK:
        return load_json(body)
    keys = [orjson.dumps(name) for name in inputs]
    return _load_cut(body, _find_spans(body, keys), partial(_place_members, names=set(inputs)))


def _load_cut(header: bytes, spans: list[JsonSpan],
              place: Callable[[Any, list[JsonSpan]], bool]) -> Any:
    """The document read with `spans` cut out, each put back as a JsonSpan by `place`; read
    whole when there is nothing to cut or a cut is not where `place` expects one."""
    if not spans:
        return load_json(header)
    parts: list[bytes] = []
    position = 0
    for index, span in enumerate(spans):
        parts.append(header[position:span.start])
        parts.append(b'"\\u0001tritium-span:%d"' % index)
        position = span.end
    parts.append(header[position:])
    try:
        document = orjson.loads(b"".join(parts))
    except orjson.JSONDecodeError:
        return load_json(header)
    if not place(document, spans):  # a cut elsewhere: read the document as it is
        return load_json(header)
    return document


def _place_data(document: Any, spans: list[JsonSpan]) -> bool:
    """Put each span where its placeholder is; False unless each was an input's `data`."""
    inputs = document.get("inputs") if type(document) is dict else None
    if type(inputs) is not list:
        return False
    return _place(spans, [item for item in inputs if type(item) is dict], {"data"})


def _place_members(document: Any, spans: list[JsonSpan], names: set[str]) -> bool:
    """Put each span where its placeholder is; False unless each was a member named after an
    input, at the top of the document or in its `parameters`."""
    if type(document) is not dict:
        return False
    objects = [document]
    if type(document.get("parameters")) is dict:
        objects.append(document["parameters"])
    return _place(spans, objects, names)


def _place(spans: list[JsonSpan], objects: list[dict[str, Any]], keys: set[str]) -> bool:
    placed: list[tuple[dict[str, Any], str, int]] = []
    for item in objects:
        for key in keys & item.keys():
            data = item[key]
            if type(data) is str and data.startswith(_PLACEHOLDER):
                digits = data[len(_PLACEHOLDER):]
                if not (digits.isascii() and digits.isdigit()):
                    return False
                placed.append((item, key, int(digits)))
    if sorted(number for _, _, number in placed) != list(range(len(spans))):
        return False
    for item, key, number in placed:
        item[key] = spans[number]
    return True


def _find_spans(header: bytes, keys: list[bytes], strings: bool = False) -> list[JsonSpan]:
    """Each `"key": [...]` array of at least `_MIN_SPAN` bytes holding no string or object (no
    `"` within), and with `strings` each one holding strings too, in the order they come."""
    spans: list[JsonSpan] = []
    for key in keys:
        spans += _spans_of(header, key, strings)
    return sorted(spans, key=lambda span: span.start)


def _spans_of(header: bytes, quoted: bytes, strings: bool) -> list[JsonSpan]:
    spans = []
    position = 0
    while (key := header.find(quoted, position)) != -1:
        position = key + len(quoted)
        colon = _skip(header, position)
        if header[colon:colon + 1] != b":":
            continue
        start = _skip(header, colon + 1)
        if header[start:start + 1] != b"[":
            continue
        end = _closing(header, start)
        cuts = None
        if end == -1 or header.find(b'"', start, end) != -1:
            if strings:  # where it ends, counting no bracket in a string
                cuts = array_cuts(header, start, SLICE)
                end = -1 if cuts is None else cuts.end
            elif end != -1:
                position = end
                continue
        if end == -1:
            break
        position = end
        if end - start >= _MIN_SPAN:
            spans.append(JsonSpan(header, start, end, cuts))
    return spans


def _skip(header: bytes, position: int) -> int:
    while header[position:position + 1] in (b" ", b"\t", b"\n", b"\r"):
        position += 1
    return position


def _closing(header: bytes, start: int) -> int:
    """One past the `]` closing the array opened at `start`, or -1 (in slices: numpy counts
    the depth, so a nested array of a million rows costs no Python loop per row)."""
    close = header.find(b"]", start)
    if close == -1:
        return -1
    if header.find(b"[", start + 1, close) == -1:
        return close + 1
    depth = 0
    position = start
    while position < len(header):
        chunk = np.frombuffer(header, np.uint8, min(SLICE, len(header) - position), position)
        steps = (chunk == 91).astype(np.int32) - (chunk == 93)
        levels = np.cumsum(steps) + depth
        closed = np.flatnonzero(levels == 0)
        if closed.size:
            return position + int(closed[0]) + 1
        depth = int(levels[-1])
        position += chunk.size
    return -1
