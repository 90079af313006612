"""Incremental detokenization and stop strings, as vLLM's detokenizer does it for its streams.

Each new token is decoded together with a few tokens before it (a byte-level BPE token may hold
half a UTF-8 character; a SentencePiece token's leading space depends on its neighbour), and text
is released only once it no longer ends in U+FFFD, the replacement decoding gives an unfinished
character: a multi-byte character is never split across two responses. When the request has stop
strings, the last (longest stop - 1) characters are held back until it is certain they do not
start one, so a streamed answer never shows the beginning of a stop string it later cuts.
"""

from __future__ import annotations

from typing import Any

# How many tokens before the new ones are decoded with them (vLLM's
# INITIAL_INCREMENTAL_DETOKENIZATION_OFFSET).
_CONTEXT_TOKENS = 5
_UNFINISHED = "\ufffd"


class IncrementalDetokenizer:
    def __init__(self, tokenizer: Any, prompt: list[int], stop: list[str],
                 include_stop: bool, skip_special_tokens: bool) -> None:
        self._tokenizer = tokenizer
        self._ids = list(prompt[-_CONTEXT_TOKENS:])
        self._prefix_offset = 0
        self._read_offset = len(self._ids)
        self._skip_special = skip_special_tokens
        self._stop = stop
        self._include_stop = include_stop
        self._hold = max((len(s) for s in stop), default=1) - 1
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
        if not self._stop:
            return False
        start = max(checked_from - self._hold, 0)
        found = [(self.text.find(s, start), s) for s in self._stop]
        found = [(index, s) for index, s in found if index >= 0]
        if not found:
            return False
        index, stop = min(found)
        self.text = self.text[: index + len(stop) if self._include_stop else index]
        return True

    def release(self, finished: bool) -> str:
        """The text not yet released that is safe to show (all of it once finished)."""
        end = len(self.text) if finished or not self._stop else len(self.text) - self._hold
        if end <= self._sent:
            return ""
        delta = self.text[self._sent:end]
        self._sent = end
        return delta
