"""Bounds on what one request may ask for, shared by the HTTP and gRPC decoders.

Triton bounds the body (`--http-max-input-size`, in `http/connection.py`) and JSON nesting (its
parser's stack; ours stops at Python's recursion limit with a 400, `json_codec`). The number of
requested outputs is bounded here so that a request naming one output a million times is
refused before any work is done per entry.
"""

from __future__ import annotations

from ...errors import TritonError

# Far above any real model's output count.
MAX_REQUESTED_OUTPUTS = 4096


def check_requested_outputs(count: int, model: str) -> None:
    if count > MAX_REQUESTED_OUTPUTS:
        raise TritonError.invalid_arg(
            f"request for model '{model}' asks for {count} outputs; at most "
            f"{MAX_REQUESTED_OUTPUTS} outputs may be requested"
        )


__all__ = ["MAX_REQUESTED_OUTPUTS", "check_requested_outputs"]
