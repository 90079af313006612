"""PyTriton's decorators for inference functions: @batch, @sample, @first_value, @group_by_values.

An inference function bound to a model receives the batch's requests (a list of `Request`, each
a mapping of input name to array) and returns one output mapping per request. The decorators
adapt simpler functions to that:

* `@batch`: the function takes the inputs of every request concatenated along the batch axis,
  as keyword arguments, and returns whole-batch outputs; they are split back per request.
* `@sample`: the function is called once per request with that request's inputs.
* `@first_value(*keys)` (under @batch): those inputs become their first value (a scalar when it
  has one element), after checking every value of the batch is the same.
* `@group_by_values(*keys, pad_fn=None)` (under @batch): the batch is split into groups with
  equal values of those inputs, the function called per group, the outputs (padded to one shape
  by `pad_fn`, e.g. `ConstantPadder()`, when the groups' shapes differ) put back in the batch's
  order.

Decoupled models: a function may yield outputs instead of returning them; each yield is one
response per request.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

import numpy as np

from .proxy import Request
from .validation import PyTritonRuntimeError, PyTritonValidationError

Outputs = dict[str, np.ndarray]


def batch(wrapped: Callable[..., Any]) -> Callable[[list[Request]], Any]:
    @functools.wraps(wrapped)
    def infer(requests: list[Request]) -> Any:
        names = list(requests[0].keys())
        inputs = {name: np.concatenate([request[name] for request in requests])
                  for name in names}
        sizes = [len(next(iter(request.values()))) if len(request) else 1
                 for request in requests]
        result = wrapped(**inputs)
        if inspect.isgenerator(result):
            return (_split(cast(Outputs, outputs), sizes) for outputs in result)
        return _split(cast(Outputs, result), sizes)

    return infer


def _split(outputs: Outputs, sizes: list[int]) -> list[Outputs]:
    found, offset = [], 0
    for size in sizes:
        found.append({name: np.asarray(array)[offset:offset + size]
                      for name, array in outputs.items()})
        offset += size
    return found


def sample(wrapped: Callable[..., Outputs]) -> Callable[[list[Request]], Any]:
    @functools.wraps(wrapped)
    def infer(requests: list[Request]) -> Any:
        if inspect.isgeneratorfunction(wrapped):
            return _zip_streams([wrapped(**request.data) for request in requests])
        return [wrapped(**request.data) for request in requests]

    return infer


def _zip_streams(streams: list[Iterator[Outputs]]) -> Iterator[list[Outputs]]:
    for outputs in zip(*streams, strict=False):  # the shortest stream ends them all
        yield list(outputs)


def first_value(*keys: str, squeeze_single_values: bool = True,
                strict: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def decorate(wrapped: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(wrapped)
        def infer(**inputs: np.ndarray) -> Any:
            for key in keys:
                if key not in inputs:
                    continue
                values = np.asarray(inputs[key])
                first = values[0]
                if strict and not all(np.array_equal(first, v) for v in values[1:]):
                    raise PyTritonValidationError(
                        f"The values on the {key!r} input are not equal. To proceed, either "
                        "disable strict mode in @first_value or ensure all values are the same."
                    )
                if squeeze_single_values and np.size(first) == 1:
                    first = np.asarray(first).reshape(()).item()
                inputs[key] = first
            return wrapped(**inputs)

        return infer

    return decorate


Padder = Callable[[tuple[Outputs, ...]], Sequence[Outputs]]


def group_by_values(*keys: str, pad_fn: Padder | None = None
                    ) -> Callable[[Callable[..., Outputs]], Callable[..., Outputs]]:
    """`pad_fn` gets the groups' outputs (in the groups' order) and returns them padded to
    shapes that stack back into one batch (e.g. `ConstantPadder`), for functions whose output
    shape depends on the group's parameters."""
    def decorate(wrapped: Callable[..., Outputs]) -> Callable[..., Outputs]:
        @functools.wraps(wrapped)
        def infer(**inputs: np.ndarray) -> Outputs:
            count = len(next(iter(inputs.values())))
            groups: dict[tuple, list[int]] = {}
            for index in range(count):
                group = tuple(_key(inputs[k][index]) for k in keys if k in inputs)
                groups.setdefault(group, []).append(index)
            if len(groups) == 1:
                return wrapped(**inputs)
            order: list[int] = []
            parts: list[Outputs] = []
            for indices in groups.values():
                parts.append(wrapped(**{name: np.asarray(v)[indices]
                                        for name, v in inputs.items()}))
                order.extend(indices)
            if pad_fn is not None:
                parts = list(pad_fn(tuple(parts)))
            back = np.argsort(np.asarray(order), kind="stable")
            return {name: np.concatenate([np.asarray(p[name]) for p in parts])[back]
                    for name in parts[0]}

        return infer

    return decorate


class ConstantPadder:
    """A `pad_fn` for `@group_by_values`: each output of every group padded at the end of each
    non-batch axis with `pad_value` to the largest group's shape; bytes and text arrays widened
    to the longest item's width. Groups whose output dtypes differ in kind (or, for numbers,
    at all) cannot be stacked: PyTritonRuntimeError."""

    def __init__(self, pad_value: Any = 0) -> None:
        self.pad_value = pad_value

    def __call__(self, groups: tuple[Outputs, ...]) -> list[Outputs]:
        names = list(dict.fromkeys(name for group in groups for name in group))
        padded: list[Outputs] = [dict(group) for group in groups]
        for name in names:
            arrays = [np.asarray(group[name]) for group in groups if name in group]
            dtype = _common_dtype(arrays)
            shape = tuple(int(n) for n in np.max([a.shape[1:] for a in arrays], axis=0))
            for group in padded:
                if name in group:
                    array = np.asarray(group[name]).astype(dtype, copy=False)
                    widths = [(0, 0)] + [(0, want - have)
                                         for want, have in zip(shape, array.shape[1:],
                                                               strict=True)]
                    group[name] = np.pad(array, widths, constant_values=self.pad_value)
        return padded


def _common_dtype(arrays: list[np.ndarray]) -> np.dtype:
    first = arrays[0].dtype
    if any(a.dtype.kind != first.kind for a in arrays):
        raise PyTritonRuntimeError(
            "All input arrays for given input name must have the same dtype.")
    if first.kind in "SU":  # fixed-width bytes or text: the widest of them
        return max((a.dtype for a in arrays), key=lambda d: d.itemsize)
    if any(a.dtype != first for a in arrays):
        raise PyTritonRuntimeError(
            "All input arrays for given input name must have the same dtype.")
    return first


def _key(value: Any) -> Any:
    array = np.asarray(value)
    return (array.dtype.str, array.shape, array.tobytes() if array.dtype != np.object_
            else tuple(array.reshape(-1).tolist()))
