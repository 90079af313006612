"""The HTTP frontend's JSON codec: orjson reads and writes first, the standard library takes
what orjson refuses. Whatever path a document takes, the bytes on the wire must mean what the
standard encoder (configured as Triton's writer) meant, NaN and Infinity included, and a body
must read as the standard library read it."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tritium.errors import TritonError
from tritium.frontend.extensions.json_codec import dumps, load_json

# Text with lone surrogates stands for non-UTF-8 BYTES elements (surrogateescape).
_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
_SCALARS = (st.none() | st.booleans() | st.integers(-(1 << 70), 1 << 70)
            | st.floats(allow_nan=True, allow_infinity=True) | _TEXT)
_DOCUMENTS = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(_TEXT, inner, max_size=6),
    max_leaves=30,
)


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values, NaN equal to NaN, 1 (int) not equal to 1.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _stdlib_bytes(document: Any) -> bytes:
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


@settings(max_examples=400, deadline=None)
@given(_DOCUMENTS)
def test_dumps_means_what_the_standard_encoder_wrote(document):
    written = dumps(document)
    expected = _stdlib_bytes(document)
    # Only the spelling of a float may differ (orjson writes 1e-05 as 0.00001, as rapidjson).
    text = written.decode("utf-8", "surrogateescape")
    assert _same(json.loads(text), json.loads(expected.decode("utf-8", "surrogateescape")))


def test_non_finite_numbers_are_written_as_triton_writes_them():
    assert dumps({"data": [1.5, math.nan, math.inf, -math.inf]}) == (
        b'{"data":[1.5,NaN,Infinity,-Infinity]}')
    assert dumps({"data": [None, 2]}) == b'{"data":[null,2]}'


def test_non_utf8_text_goes_out_as_its_bytes():
    raw = b"\xff\xfeok"
    assert dumps({"data": [raw.decode("utf-8", "surrogateescape")]}) == (
        b'{"data":["\xff\xfeok"]}')


@settings(max_examples=400, deadline=None)
@given(_DOCUMENTS)
# Infinity sends the body the standard library's way: its big integers must read as doubles too.
@example({"": -9223372036854775809, "0": math.inf})
def test_a_body_reads_as_the_standard_library_reads_it(document):
    body = _stdlib_bytes({"doc": document})
    try:
        expected = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return  # not a body a client can send as UTF-8 JSON
    read = load_json(body)
    # Integers past 64 bits read as doubles, as rapidjson (Triton) reads them.
    assert _same(read, _as_rapidjson(expected))


def _as_rapidjson(value: Any) -> Any:
    if type(value) is int and not -(1 << 63) <= value < (1 << 64):
        return float(value)
    if isinstance(value, list):
        return [_as_rapidjson(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_rapidjson(v) for k, v in value.items()}
    return value


def test_lenient_bodies_still_read_and_bad_ones_keep_rapidjsons_words():
    assert load_json(b'\xef\xbb\xbf{"a":1}') == {"a": 1}
    assert load_json(b'{"a":1}\x00binary tail') == {"a": 1}
    assert math.isnan(load_json(b'{"a":NaN}')["a"])
    assert load_json(b'{"a":"\\ud800"}') == {"a": "\ud800"}
    for body, message in [
        (b'{"a":}', "Invalid value. at 5"),
        (b'{"a":1} x', "The document root must not be followed by other values. at 8"),
        (b'{"a"', "Missing a colon after a name of object member. at 4"),
        # A trailing comma: Python 3.13 has its own words for it, at the comma.
        (b'[1, ]', "Invalid value. at 4"),
        (b'{"a":[1,] }', "Invalid value. at 8"),
        (b'{"a":1 , }', "Missing a name for object member. at 9"),
    ]:
        try:
            load_json(body)
        except TritonError as exc:
            assert exc.message == f"failed to parse the request JSON buffer: {message}"
        else:
            raise AssertionError(f"{body!r} was read")
