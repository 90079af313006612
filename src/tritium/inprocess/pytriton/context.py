"""Which bound model a call of an inference function serves: PyTriton's TritonContext.

PyTriton's decorators that need the model's configuration (`@batch` and `@sample` mapping a
returned tuple onto the outputs, `@fill_optionals`, `@pad_batch`, `@triton_context`) find it
through the callable. Here the binding sets it for the duration of each call (a context
variable, so concurrent instances on their own threads each see their own), and the decorators
read it back; plain functions and functools-style wrappers need nothing more.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from .exceptions import PyTritonValidationError
from .model_config import TritonModelConfig


@dataclasses.dataclass
class TritonContext:
    """What `@triton_context` passes as `triton_context`: `model_configs[infer_func]` is the
    bound model's TritonModelConfig."""

    model_configs: dict[Callable[..., Any], TritonModelConfig] = dataclasses.field(
        default_factory=dict)


_current: contextvars.ContextVar[tuple[TritonContext, TritonModelConfig]] = (
    contextvars.ContextVar("pytriton_model"))


@contextlib.contextmanager
def serving(context: TritonContext, config: TritonModelConfig) -> Iterator[None]:
    """Make `config` the model the calls inside this block serve."""
    token = _current.set((context, config))
    try:
        yield
    finally:
        _current.reset(token)


def current() -> tuple[TritonContext, TritonModelConfig]:
    """The context and configuration of the model being served; PyTriton's error outside
    a bound call."""
    found = _current.get(None)
    if found is None:
        raise PyTritonValidationError(
            "Wrapped function or object must bound with triton to get  __triton_context__")
    return found
