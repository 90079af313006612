"""Property tests of where a large JSON array of strings is cut for reading in slices
(frontend/http/json_cuts.py; the live-server tests are in test_http1_bulk_strings.py): the
slices read back exactly the leaves the whole-document reader reads, whatever the strings hold
(commas, brackets, quotes, runs of backslashes, non-ASCII) and wherever the scan's chunks end;
a damaged text is refused or read as the whole-document reader reads it, never differently."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tritium.frontend.http.json_cuts import array_cuts
from tritium.frontend.http.json_spans import JsonSpan, leaves

_PIECES = st.sampled_from(list('ab,[]"\\ \n') + ["é", "😀", "\\\\", '\\"', '"],["'])
_STRINGS = st.lists(_PIECES, max_size=8).map("".join)


def _nested(depth: int) -> st.SearchStrategy[list]:
    if depth == 0:
        return st.lists(_STRINGS, min_size=1, max_size=12)
    return st.lists(_nested(depth - 1), min_size=1, max_size=4)


_DOCUMENTS = st.integers(0, 3).flatmap(_nested)
_SETTINGS = settings(max_examples=150, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])


def _read(header: bytes, every: int) -> tuple[int, list | None]:
    """(the array's end as cut, its leaves as read in slices; None if reading failed)."""
    start = header.index(b"[")
    cuts = array_cuts(header, start, every)
    assert cuts is not None
    try:
        return cuts.end, [leaf for piece in JsonSpan(header, start, cuts.end, cuts).slices()
                          for leaf in piece]
    except Exception:
        return cuts.end, None


@_SETTINGS
@given(_DOCUMENTS, st.integers(1, 40), st.booleans(), st.sampled_from(["", " ", "\n  "]))
def test_slices_read_what_the_whole_reader_reads(document, every, ascii_only, spacing):
    text = json.dumps(document, ensure_ascii=ascii_only, separators=("," + spacing, ":"))
    header = b'{"data": ' + text.encode() + b"}"
    end, read = _read(header, every)
    assert end == len(header) - 1
    assert read == leaves(document)[0]


@_SETTINGS
@given(_DOCUMENTS, st.integers(1, 40), st.data())
def test_a_damaged_array_is_never_read_differently(document, every, data):
    text = json.dumps(document).encode()
    at = data.draw(st.integers(0, len(text) - 1))
    if data.draw(st.booleans()):
        text = text[:at] + text[at + 1:]
    else:
        text = text[:at] + data.draw(st.sampled_from([b",", b'"', b"\\", b"[", b"]"])) + text[at:]
    header = b'{"data": ' + text + b"}"
    if b"[" not in header or array_cuts(header, header.index(b"["), every) is None:
        return
    end, read = _read(header, every)
    try:
        whole = json.loads(header[header.index(b"["):end])
    except ValueError:
        assert read is None  # refused whole: refused in slices too
        return
    assert read == leaves(whole)[0]
