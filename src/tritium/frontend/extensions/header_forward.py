"""Request headers as request parameters (--http-header-forward-pattern,
--grpc-header-forward-pattern).

Counterpart: Triton's HTTP and gRPC frontends, which add every request header (gRPC: metadata
key) whose name the pattern matches anywhere (RE2::PartialMatch) to the inference request as a
string parameter named as the header was sent. Models see them in `request.parameters()`, and
ensembles hand them on to their steps with the other parameters.

Triton compiles `"(?i)" + pattern` with RE2: header names are case-insensitive, and a pattern may
turn that off again with RE2's `(?-i)`, which Python's `re` does not accept. The pattern is
therefore compiled with RE2 itself (google-re2), so every pattern Triton takes means the same here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import re2

from ...request import InferenceRequest

# Header names repeat from request to request: each name's answer is kept, up to this many names
# (a client inventing names cannot grow the cache past it; those are matched each time).
_CACHED_NAMES = 4096


class HeaderPattern:
    """A compiled forward pattern: which header names become request parameters."""

    def __init__(self, text: str) -> None:
        options = re2.Options()
        options.log_errors = False  # the error is raised with the pattern, not logged by RE2
        try:
            self._regexp = re2.compile("(?i)" + text, options)
        except re2.error as exc:
            reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
            raise ValueError(f"invalid header forward pattern '{text}': {reason}") from None
        self.text = text
        self._answers: dict[str, bool] = {}

    def matches(self, name: str) -> bool:
        """True when `name` contains a match (RE2::PartialMatch, case-insensitive by default)."""
        answer = self._answers.get(name)
        if answer is None:
            answer = self._regexp.search(name) is not None
            if len(self._answers) < _CACHED_NAMES:
                self._answers[name] = answer
        return answer


def forward_headers(request: InferenceRequest, pattern: HeaderPattern | None,
                    headers: Iterable[tuple[Any, Any]]) -> None:
    """Add the headers whose name `pattern` matches to `request.parameters` (str values)."""
    if pattern is None:
        return
    for name, value in headers:
        if isinstance(name, bytes):
            name = name.decode("latin-1")
        if isinstance(value, bytes):
            value = value.decode("latin-1")
        if pattern.matches(name):
            request.parameters[name] = value


__all__ = ["HeaderPattern", "forward_headers"]
