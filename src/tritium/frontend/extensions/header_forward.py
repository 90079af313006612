"""Request headers as request parameters (--http-header-forward-pattern,
--grpc-header-forward-pattern).

Counterpart: Triton's HTTP and gRPC frontends, which add every request header (gRPC: metadata
key) whose name the pattern matches anywhere (RE2::PartialMatch) to the inference request as a
string parameter named as the header was sent. Models see them in `request.parameters()`, and
ensembles hand them on to their steps with the other parameters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ...request import InferenceRequest


def forward_headers(request: InferenceRequest, pattern: re.Pattern[str] | None,
                    headers: Iterable[tuple[Any, Any]]) -> None:
    """Add the headers whose name `pattern` matches to `request.parameters` (str values)."""
    if pattern is None:
        return
    for name, value in headers:
        if isinstance(name, bytes):
            name = name.decode("latin-1")
        if isinstance(value, bytes):
            value = value.decode("latin-1")
        if pattern.search(name):
            request.parameters[name] = value


__all__ = ["forward_headers"]
