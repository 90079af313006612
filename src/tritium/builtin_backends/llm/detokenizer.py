"""Incremental detokenization and stop strings, as vLLM's detokenizer does it for its streams.

Each new token is decoded together with a few tokens before it (a byte-level BPE token may hold
half a UTF-8 character; a SentencePiece token's leading space depends on its neighbour), and text
is released only once it no longer ends in U+FFFD, the replacement decoding gives an unfinished
character: a multi-byte character is never split across two responses. When the request has stop
strings, the last (longest stop - 1) characters are held back until it is certain they do not
start one, so a streamed answer never shows the beginning of a stop string it later cuts.

Stop strings are looked up by length in sets, only where they would end in the newly decoded
text (as vLLM looks for them): a request with thousands of stop strings then costs each token a
set lookup per distinct length, not a scan per string (100000 strings used to add tens of
milliseconds to every token of every running request).
"""

from __future__ import annotations

from typing import Any

# How many tokens before the new ones are decoded with them (vLLM's
# INITIAL_INCREMENTAL_DETOKENIZATION_OFFSET).
_CONTEXT_TOKENS = 5
_UNFINISHED = "\ufffd"


class StopStrings:
    """A request's stop strings, grouped by length for lookups at each possible end."""

    def __init__(self, stop: list[str]) -> None:
        by_length: dict[int, set[str]] = {}
        for string in stop:
            by_length.setdefault(len(string), set()).add(string)
        self._by_length = sorted(by_length.items())
        self.longest = self._by_length[-1][0] if self._by_length else 0

    def earliest(self, text: str, new_from: int) -> tuple[int, str] | None:
        """(start, string) of the first stop string ending at or after `new_from`, if any; of
        two starting at the same place, the smaller string."""
        best: tuple[int, str] | None = None
        for length, strings in self._by_length:
            for start in range(max(new_from - length + 1, 0), len(text) - length + 1):
                if best is not None and start > best[0]:
                    break
                candidate = text[start:start + length]
                if candidate in strings:
                    if best is None or (start, candidate) < best:
                        best = (start, candidate)
                    break
        return best


class IncrementalDetokenizer:
    def __init__(self, tokenizer: Any, prompt: list[int], stop: list[str],
                 include_stop: bool, skip_special_tokens: bool) -> None:
        self._tokenizer = tokenizer
        self._ids = list(prompt[-_CONTEXT_TOKENS:])
        self._prefix_offset = 0
        self._read_offset = len(self._ids)
        self._skip_special = skip_special_tokens
        self._stop = StopStrings(stop)
        self._include_stop = include_stop
        self._hold = max(self._stop.longest - 1, 0)
        self.text = ""  # everything decoded so far (cut at a stop string once found)
        self._sent = 0  # how much of `text` has been released

    def add(self, token: int, check_stop: bool = True) -> bool:
        """Decode one more token; True when the text reached a stop string (text cut there)."""
        self._ids.append(token)
        decode = self._tokenizer.decode
        before = decode(self._ids[self._prefix_offset:self._read_offset],
                        skip_special_tokens=self._skip_special)
        after = decode(self._ids[self._prefix_offset:], skip_special_tokens=self._skip_special)
        if len(after) <= len(before) or after.endswith(_UNFINISHED):
            return False  # an unfinished character: wait for the next token
        checked_from = len(self.text)
        self.text += after[len(before):]
        self._prefix_offset = self._read_offset
        self._read_offset = len(self._ids)
        return check_stop and self._find_stop(checked_from)

    def _find_stop(self, checked_from: int) -> bool:
        found = self._stop.earliest(self.text, checked_from)
        if found is None:
            return False
        index, stop = found
        self.text = self.text[: index + len(stop) if self._include_stop else index]
        return True

    def release(self, finished: bool) -> str:
        """The text not yet released that is safe to show (all of it once finished)."""
        end = len(self.text) if finished else len(self.text) - self._hold
        if end <= self._sent:
            return ""
        delta = self.text[self._sent:end]
        self._sent = end
        return delta
