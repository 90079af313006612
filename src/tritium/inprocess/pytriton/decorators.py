"""PyTriton's decorators for inference functions: @batch, @sample, @first_value, @group_by_values.

An inference function bound to a model receives the batch's requests (a list of `Request`, each
a mapping of input name to array) and returns one output mapping per request. The decorators
adapt simpler functions to that:

* `@batch`: the function takes the inputs of every request concatenated along the batch axis,
  as keyword arguments, and returns whole-batch outputs; they are split back per request.
* `@sample`: the function is called once per request with that request's inputs.
* `@first_value(*keys)` (under @batch): those inputs become their first value (a scalar when it
  has one element), after checking every value of the batch is the same.
* `@group_by_values(*keys)` (under @batch): the batch is split into groups with equal values of
  those inputs, the function called per group, the outputs put back in the batch's order.

Decoupled models: a function may yield outputs instead of returning them; each yield is one
response per request.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any, cast

import numpy as np

from .proxy import Request
from .validation import PyTritonValidationError

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


def group_by_values(*keys: str) -> Callable[[Callable[..., Outputs]], Callable[..., Outputs]]:
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
            back = np.argsort(np.asarray(order), kind="stable")
            return {name: np.concatenate([np.asarray(p[name]) for p in parts])[back]
                    for name in parts[0]}

        return infer

    return decorate


def _key(value: Any) -> Any:
    array = np.asarray(value)
    return (array.dtype.str, array.shape, array.tobytes() if array.dtype != np.object_
            else tuple(array.reshape(-1).tolist()))
