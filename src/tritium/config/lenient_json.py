"""JSON as protobuf's C++ parser reads it, for configurations clients send.

Triton parses a load request's `config` with protobuf's JsonStringToMessage, whose parser also
takes what strict JSON refuses: object keys without quotes (`{direct: {...}}`), strings in
single quotes and one trailing comma before a closing bracket. Triton's own QA tests send such
configurations (L0_iterative_sequence), so they are turned into strict JSON here before Python's
`json` reads them; strict JSON passes through unchanged.
"""

from __future__ import annotations

import json
from typing import Any

_LITERALS = frozenset({"true", "false", "null"})


def loads(text: str | bytes) -> Any:
    """`json.loads` of `text` as protobuf's parser reads it (ValueError when it cannot)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    try:
        return json.loads(text)
    except ValueError as strict_error:
        try:
            return json.loads(_strict(text))
        except ValueError:
            raise strict_error from None  # where the client's own text goes wrong


def _strict(text: str) -> str:
    out: list[str] = []
    containers: list[str] = []  # the open brackets
    expect_key = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            end = _string_end(text, i, '"')
            out.append(text[i:end])
            i, expect_key = end, False
            continue
        if c == "'":
            end = _string_end(text, i, "'")
            out.append(_double_quoted(text[i + 1:end - 1]))
            i, expect_key = end, False
            continue
        if expect_key and (c.isalpha() or c == "_"):
            end = i
            while end < n and (text[end].isalnum() or text[end] == "_"):
                end += 1
            word = text[i:end]
            out.append(word if word in _LITERALS else f'"{word}"')
            i, expect_key = end, False
            continue
        if c in "{[":
            containers.append(c)
            expect_key = c == "{"
        elif c in "}]":
            _drop_trailing_comma(out)
            if containers:
                containers.pop()
            expect_key = False
        elif c == ",":
            expect_key = bool(containers) and containers[-1] == "{"
        elif not c.isspace():
            expect_key = False
        out.append(c)
        i += 1
    return "".join(out)


def _string_end(text: str, start: int, quote: str) -> int:
    """The index after the string starting at `start` (its end, if it is not closed)."""
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == quote:
            return i + 1
        i += 1
    return len(text)


def _double_quoted(body: str) -> str:
    """A single-quoted string's body as a JSON string: \\' unescaped, " escaped."""
    out = ['"']
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append("'" if nxt == "'" else c + nxt)
            i += 2
            continue
        out.append('\\"' if c == '"' else c)
        i += 1
    out.append('"')
    return "".join(out)


def _drop_trailing_comma(out: list[str]) -> None:
    for index in range(len(out) - 1, -1, -1):
        if out[index].isspace():
            continue
        if out[index] == ",":
            del out[index]
        return
