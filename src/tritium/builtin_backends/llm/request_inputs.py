"""Reading the inputs of a request: the vLLM backend's one-element scalars (flags, JSON, text)
and the llm backend's own list of token ids.

Triton's vLLM backend reads each of its inputs as a single value; so do the llm backend's task
(task.py) and prompt (prompt.py) readers, with one INVALID_ARG wording for a tensor of another
size or bytes that are not UTF-8.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tritium.backend import Request, TritonError


def first(request: Request, name: str) -> Any:
    """The input's one element, or None when the request leaves the input out."""
    tensor = request.input(name)
    if tensor is None:
        return None
    values = np.asarray(tensor.data).reshape(-1)
    if values.size != 1:
        raise TritonError.invalid_arg(
            f"input '{name}' must hold exactly one element, got {values.size}"
        )
    return values[0]


def flag(request: Request, name: str, default: bool | None) -> bool | None:
    value = first(request, name)
    return default if value is None else bool(value)


def string(request: Request, name: str) -> str | None:
    value = first(request, name)
    if value is None:
        return None
    if isinstance(value, str):
        return value
    try:
        return bytes(value).decode("utf-8")
    except UnicodeDecodeError:
        raise TritonError.invalid_arg(f"input '{name}' must be UTF-8 text") from None


def text_input(request: Request) -> str:
    text = string(request, "text_input")
    if text is None:
        raise TritonError.invalid_arg("input 'text_input' is missing")
    return text


def token_ids(request: Request, name: str) -> list[int] | None:
    """The input's elements as token ids (an INT64 tensor of any shape, read flat), or None
    when the request leaves the input out."""
    tensor = request.input(name)
    if tensor is None:
        return None
    return [int(value) for value in np.asarray(tensor.data).reshape(-1)]
