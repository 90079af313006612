"""Where a large JSON array of strings ends, and where it may be cut for reading in slices.

A `data` array of 4 million strings (20 MB) read in one call of the JSON reader held the
interpreter lock for 0.26 s: every other client of the server waited that long. Read a slice at
a time it must be cut between elements, which a search for commas cannot tell from commas in
strings. Here the array's text is scanned with numpy, a megabyte at a time, the way a JSON
reader skips strings (a quote preceded by an odd run of backslashes is part of the string):
the brackets and commas outside strings give where the array ends and where its elements
part. The scan trusts the text to be JSON; `json_spans` reads every slice with the JSON reader
and falls back to reading the whole document when one does not parse, so a text the scan
misreads is refused or read as the JSON reader reads it, never differently.
"""

from __future__ import annotations

import time

import numpy as np

# The deepest level at which an array's elements are looked for: `[[...]]` (a batch of one) is
# cut at its second level, and so on, up to this one.
_LEVELS = 4
_QUOTE, _BACKSLASH, _OPEN, _CLOSE, _COMMA = 34, 92, 91, 93, 44
_WHITESPACE = b" \t\n\r"


class ArrayCuts:
    """An array's text from `start` (its `[`) to `end` (one past its `]`), and the cuts of the
    innermost of its single nested arrays (`[[...]]`): `inner` is that array's inside, `cuts`
    the commas between its elements, about `every` bytes apart."""

    __slots__ = ("start", "end", "inner", "cuts")

    def __init__(self, start: int, end: int, inner: tuple[int, int], cuts: list[int]) -> None:
        self.start = start
        self.end = end
        self.inner = inner
        self.cuts = cuts


def array_cuts(text: bytes, start: int, every: int) -> ArrayCuts | None:
    """The cuts of the array opened at `text[start]`; None if it does not close."""
    scan = _Scan(start, every)
    position = start
    while position < len(text):
        size = min(every, len(text) - position)
        end = scan.chunk(np.frombuffer(text, np.uint8, size, position), position)
        if end is not None:
            return _innermost(text, start, end, scan)
        position += size
        time.sleep(0)  # the event loop's thread may take the interpreter lock between chunks
    return None


class _Scan:
    """The state of a scan carried from one chunk to the next."""

    def __init__(self, start: int, every: int) -> None:
        self.every = every
        self.in_string = False
        self.backslashes = 0  # the run of backslashes that ended the last chunk
        self.depth = 0
        # Per level (1 to _LEVELS): its commas seen, the cuts chosen and the next one's place.
        self.commas = [0] * (_LEVELS + 1)
        self.cuts: list[list[int]] = [[] for _ in range(_LEVELS + 1)]
        self.next_cut = [start + every] * (_LEVELS + 1)

    def chunk(self, chunk: np.ndarray, offset: int) -> int | None:
        """Read one chunk at `offset`; one past the array's closing bracket if it is in it."""
        quotes = np.flatnonzero(chunk == _QUOTE)
        if quotes.size and (self.backslashes or _BACKSLASH in chunk):
            quotes = quotes[~self._escaped(chunk, quotes)]
        self._carry_backslashes(chunk)
        marks = np.flatnonzero((chunk == _OPEN) | (chunk == _CLOSE) | (chunk == _COMMA))
        # A mark is outside strings when an even number of quotes (odd if the chunk starts
        # inside a string) comes before it.
        before = np.searchsorted(quotes, marks) + self.in_string
        marks = marks[before % 2 == 0]
        self.in_string = bool((quotes.size + self.in_string) % 2)
        kinds = chunk[marks]
        levels = np.cumsum((kinds == _OPEN).astype(np.int64) - (kinds == _CLOSE)) + self.depth
        closed = np.flatnonzero((levels == 0) & (kinds == _CLOSE))
        end = None
        if closed.size:
            stop = int(closed[0])
            end = offset + int(marks[stop]) + 1
            marks, kinds, levels = marks[:stop], kinds[:stop], levels[:stop]
        elif levels.size:
            self.depth = int(levels[-1])
        commas = kinds == _COMMA
        for level in range(1, _LEVELS + 1):
            found = marks[commas & (levels == level)] + offset
            self.commas[level] += found.size
            self._choose(level, found)
        return end

    def _choose(self, level: int, commas: np.ndarray) -> None:
        """Cuts among a level's commas (in order): the first at or past each `every` bytes."""
        cuts, next_cut = self.cuts[level], self.next_cut[level]
        while commas.size:
            at = int(np.searchsorted(commas, next_cut))
            if at == commas.size:
                break
            cut = int(commas[at])
            cuts.append(cut)
            next_cut = cut + self.every
            commas = commas[at + 1:]
        self.next_cut[level] = next_cut

    def _escaped(self, chunk: np.ndarray, quotes: np.ndarray) -> np.ndarray:
        """Which quotes follow an odd run of backslashes (the first may continue the run that
        ended the last chunk)."""
        others = np.flatnonzero(chunk != _BACKSLASH)
        previous = np.searchsorted(others, quotes) - 1  # the character before each run
        run = quotes - np.where(previous >= 0, others[np.maximum(previous, 0)], -1) - 1
        run = np.where(previous >= 0, run, run + self.backslashes)
        return run % 2 == 1

    def _carry_backslashes(self, chunk: np.ndarray) -> None:
        if chunk[-1] != _BACKSLASH:
            self.backslashes = 0
            return
        others = np.flatnonzero(chunk != _BACKSLASH)
        if not others.size:
            self.backslashes += chunk.size
        else:
            self.backslashes = chunk.size - 1 - int(others[-1])


def _innermost(text: bytes, start: int, end: int, scan: _Scan) -> ArrayCuts:
    """The array's cuts at the first level with commas, under single nested arrays (each
    level's inside, whitespace aside, one `[...]`)."""
    inner = (start + 1, end - 1)
    for level in range(1, _LEVELS + 1):
        if scan.commas[level] or level == _LEVELS:
            return ArrayCuts(start, end, inner, scan.cuts[level])
        first, last = _strip(text, *inner)
        if last - first < 2 or text[first] != _OPEN or text[last - 1] != _CLOSE:
            break
        inner = (first + 1, last - 1)
    return ArrayCuts(start, end, inner, [])


def _strip(text: bytes, first: int, last: int) -> tuple[int, int]:
    while first < last and text[first] in _WHITESPACE:
        first += 1
    while last > first and text[last - 1] in _WHITESPACE:
        last -= 1
    return first, last


__all__ = ["ArrayCuts", "array_cuts"]
