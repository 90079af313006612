"""Constructor argument errors worded as pybind11 words them in Triton's stub.

Triton's `Tensor`, `InferenceRequest`, `InferenceResponse` and `TritonError` are pybind11
classes: a missing or wrongly typed argument raises TypeError "__init__(): incompatible
constructor arguments. The following argument types are supported: ... Invoked with: ...".
Models (and Triton's own tests) catch TypeError and read that text; `pybind_constructor` gives
the Python classes here the same behaviour. A constructor signals a wrongly typed argument by
raising `IncompatibleArguments`; a missing or unknown argument is found by binding.
"""

from __future__ import annotations

import functools
import inspect
import operator
from collections.abc import Callable
from typing import Any


class IncompatibleArguments(TypeError):
    """Raised inside a wrapped constructor: an argument pybind11 would not convert."""


def incompatible(signature: str, args: tuple, kwargs: dict) -> TypeError:
    invoked = ", ".join(repr(a) for a in args)
    if kwargs:
        named = ", ".join(f"{key}={value!r}" for key, value in kwargs.items())
        invoked = f"{invoked}; kwargs: {named}" if invoked else f"kwargs: {named}"
    return TypeError(
        "__init__(): incompatible constructor arguments. The following argument types are "
        f"supported:\n    1. {signature}\n\nInvoked with: {invoked}"
    )


def pybind_constructor(signature: str) -> Callable[[Callable], Callable]:
    """Wrap `__init__` so that argument errors read as pybind11's for `signature`."""

    def wrap(init: Callable) -> Callable:
        binder = inspect.signature(init)

        @functools.wraps(init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            # The call itself finds a missing or unknown argument; binding again (slow: it
            # cost a quarter of a stub's time per request) only tells that TypeError apart
            # from one the constructor raised for another reason.
            try:
                init(self, *args, **kwargs)
            except IncompatibleArguments:
                raise incompatible(signature, args, kwargs) from None
            except TypeError:
                try:
                    binder.bind(self, *args, **kwargs)
                except TypeError:
                    raise incompatible(signature, args, kwargs) from None
                raise

        return __init__

    return wrap


def as_str(value: Any) -> str:
    """pybind11's `str` caster: str (numpy.str_ too), or bytes decoded as UTF-8."""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise IncompatibleArguments() from None
    raise IncompatibleArguments()


def as_int(value: Any) -> int:
    """pybind11's integer caster: int, or anything with __index__ (numpy integers)."""
    if isinstance(value, float):
        raise IncompatibleArguments()
    try:
        return operator.index(value)
    except TypeError:
        raise IncompatibleArguments() from None


__all__ = ["IncompatibleArguments", "as_int", "as_str", "incompatible", "pybind_constructor"]
