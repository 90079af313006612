"""PyTriton's decorators for inference functions (`pytriton.decorators`).

An inference function bound to a model receives the batch's requests (a list of `Request`, each
a mapping of input name to array) and returns one output mapping per request. The decorators
adapt simpler functions to that:

* `@batch`: the function takes the inputs of every request concatenated along the batch axis,
  as keyword arguments, and returns whole-batch outputs (a dict, or a tuple/list in the order
  the outputs were bound); they are split back per request.
* `@sample`: the function is called once per request with that request's inputs.
* `@first_value(*keys)` (under @batch): those inputs become their first value (a scalar when it
  has one element), after checking every value of the batch is the same.
* `@group_by_values(*keys, pad_fn=None)` (under @batch): the batch is split into groups with
  equal values of those inputs, the function called per group, the outputs (padded to one shape
  by `pad_fn`, e.g. `ConstantPadder()`, when the groups' shapes differ) put back in the batch's
  order.
* `@group_by_keys` (over @batch): requests grouped by the set of inputs they carry.
* `@fill_optionals(**defaults)` (outermost): optional inputs a request lacks get the default
  (an array without the batch axis), repeated to the request's batch size.
* `@pad_batch` (under @batch): the batch grown, repeating its last row, to the next preferred
  batch size (or max_batch_size).
* `@triton_context`: the function also gets `triton_context` (its `model_configs[infer_func]`).

Decoupled models: a function may yield outputs instead of returning them; each yield is one
response per request.

Each decorator also works on methods (a class whose decorated `__call__` is bound as the
inference function, as PyTriton's examples do): see `_Adapter`.
"""

from __future__ import annotations

import functools
import inspect
import itertools
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from .context import current
from .exceptions import PyTritonBadParameterError, PyTritonRuntimeError, PyTritonValidationError
from .model_config import TritonModelConfig
from .proxy import Request

Outputs = dict[str, np.ndarray]
TRITON_CONTEXT_FIELD_NAME = "triton_context"


Adapt = Callable[[Callable[..., Any]], Callable[..., Any]]


class _Adapter:
    """A decorator's wrapper that stays one on methods. Called, it runs `adapt(wrapped)`; read
    through an instance (a decorated method: `obj.__call__`, `obj.infer`), it binds the instance
    to the function it wraps, through any decorators in between, so the call receives what a
    plain function's would (the requests first), as PyTriton's decorators (built on wrapt) do."""

    def __init__(self, adapt: Adapt, wrapped: Callable[..., Any]) -> None:
        functools.update_wrapper(self, wrapped, updated=())
        self._adapt = adapt
        self._wrapped = wrapped
        self._call = adapt(wrapped)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*args, **kwargs)

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        bind = getattr(self._wrapped, "__get__", None)
        if instance is None or bind is None:
            return self
        return _Adapter(self._adapt, bind(instance, owner))


def _method_aware(adapt: Adapt) -> Adapt:
    """`adapt` (wrapped function -> wrapper) as a decorator whose wrappers work on methods."""
    @functools.wraps(adapt)
    def decorator(wrapped: Callable[..., Any]) -> Callable[..., Any]:
        return _Adapter(adapt, wrapped)

    return decorator


def get_inference_request_batch_size(inference_request: Request | Mapping[str, np.ndarray]
                                     ) -> int:
    """A request's batch size: its first input's first dimension."""
    return int(np.shape(next(iter(inference_request.values())))[0])


def convert_output(outputs: Any, model_config: TritonModelConfig | None = None) -> Outputs:
    """A function's outputs as a dict: a tuple or list maps onto the model's outputs in the
    order they were bound (the model being served, unless `model_config` is given)."""
    if isinstance(outputs, dict):
        return outputs
    if isinstance(outputs, (list, tuple)):
        config = model_config or current()[1]
        if len(outputs) != len(config.outputs):
            raise PyTritonValidationError("Outputs length different than config outputs length")
        return {str(spec.name): value for spec, value in zip(config.outputs, outputs, strict=True)}
    raise PyTritonValidationError(f"Unsupported output type {type(outputs)}.")


@_method_aware
def batch(wrapped: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(wrapped)
    def infer(requests: list[Request], *args: Any, **kwargs: Any) -> Any:
        names = requests[0].keys()
        if any(request.keys() != names for request in requests[1:]):
            raise PyTritonValidationError("Cannot batch requests with different set of inputs keys")
        inputs = {name: np.concatenate([request[name] for request in requests])
                  for name in names}
        sizes = [get_inference_request_batch_size(request) if len(request) else 1
                 for request in requests]
        result = wrapped(*args, **{**kwargs, **inputs})
        if inspect.isgenerator(result):
            return (_split(convert_output(outputs), sizes) for outputs in result)
        return _split(convert_output(result), sizes)

    return infer


def _split(outputs: Outputs, sizes: list[int]) -> list[Outputs]:
    total = sum(sizes)
    wrong = {name: np.shape(array) for name, array in outputs.items()
             if np.shape(array)[:1] != (total,)}
    if wrong:
        raise ValueError(
            "Received output tensors with different batch sizes: "
            + ", ".join(f"{name}: {shape}" for name, shape in wrong.items())
            + f". Expected batch size: {total}. ")
    found, offset = [], 0
    for size in sizes:
        found.append({name: np.asarray(array)[offset:offset + size]
                      for name, array in outputs.items()})
        offset += size
    return found


@_method_aware
def sample(wrapped: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(wrapped)
    def infer(requests: list[Request], *args: Any, **kwargs: Any) -> Any:
        if inspect.isgeneratorfunction(wrapped):
            return _zip_streams([
                (convert_output(outputs)
                 for outputs in wrapped(*args, **{**kwargs, **request.data}))
                for request in requests])
        return [convert_output(wrapped(*args, **{**kwargs, **request.data}))
                for request in requests]

    return infer


def _zip_streams(streams: list[Iterator[Outputs]]) -> Iterator[list[Outputs]]:
    for outputs in zip(*streams, strict=False):  # the shortest stream ends them all
        yield list(outputs)


@_method_aware
def group_by_keys(wrapped: Callable[..., Any]) -> Callable[..., Any]:
    """Call the function once per group of requests carrying the same inputs (so @batch
    under it can stack them), the results put back in the requests' order."""
    @functools.wraps(wrapped)
    def infer(requests: list[Request], *args: Any, **kwargs: Any) -> Any:
        def keys(index: int) -> tuple[str, ...]:
            return tuple(sorted(requests[index].keys()))

        results: list[Any] = [None] * len(requests)
        for _, group in itertools.groupby(sorted(range(len(requests)), key=keys), key=keys):
            indices = list(group)
            for index, result in zip(indices, wrapped([requests[i] for i in indices],
                                                      *args, **kwargs), strict=True):
                results[index] = result
        return results

    return infer


def fill_optionals(**defaults: np.ndarray) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Fill the optional inputs a request lacks with `defaults` (numpy arrays without the
    batch axis, of the input's dtype and shape); checked against the model on each call."""
    def decorate(wrapped: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(wrapped)
        def infer(requests: list[Request], *args: Any, **kwargs: Any) -> Any:
            config = current()[1]
            _check_defaults(defaults, config)
            for request in requests:
                size = get_inference_request_batch_size(request) if config.batching else None
                for name, value in defaults.items():
                    if name not in request:
                        request[name] = (value if size is None
                                         else np.tile(value, (size,) + (1,) * value.ndim))
            return wrapped(requests, *args, **kwargs)

        return infer

    return _method_aware(decorate)


def _check_defaults(defaults: dict[str, Any], config: TritonModelConfig) -> None:
    inputs = {spec.name: spec for spec in config.inputs}
    unknown = sorted(set(defaults) - set(inputs))
    if unknown:
        raise PyTritonBadParameterError(f"Could not found {', '.join(unknown)} inputs")
    not_numpy = {k: v for k, v in defaults.items() if not isinstance(v, np.ndarray)}
    if not_numpy:
        raise PyTritonBadParameterError(
            f"Could not use {', '.join(f'{k}={v}' for k, v in not_numpy.items())} defaults "
            "as they are not NumPy arrays")
    dtypes = [f"{k}: dtype={v.dtype} expected_dtype={np.dtype(inputs[k].dtype)}"
              for k, v in defaults.items() if v.dtype != np.dtype(inputs[k].dtype)]
    if dtypes:
        raise PyTritonBadParameterError(
            f"Could not use {', '.join(dtypes)} defaults as they have different than input "
            "signature dtypes")
    shapes = [f"{k}: shape={v.shape} expected_shape={tuple(inputs[k].shape)}"
              for k, v in defaults.items() if not _fits(v.shape, tuple(inputs[k].shape))]
    if shapes:
        raise PyTritonBadParameterError(
            f"Could not use {', '.join(shapes)} defaults as they have different than input "
            "signature shapes")


def _fits(shape: tuple[int, ...], declared: tuple[int, ...]) -> bool:
    return len(shape) == len(declared) and all(d in (-1, s) for s, d in zip(shape, declared,
                                                                             strict=True))


@_method_aware
def triton_context(wrapped: Callable[..., Any]) -> Callable[..., Any]:
    """Pass `triton_context` (a TritonContext) to the function as a keyword argument."""
    @functools.wraps(wrapped)
    def infer(*args: Any, **kwargs: Any) -> Any:
        kwargs[TRITON_CONTEXT_FIELD_NAME] = current()[0]
        return wrapped(*args, **kwargs)

    return infer


@_method_aware
def pad_batch(wrapped: Callable[..., Any]) -> Callable[..., Any]:
    """Grow the batch (under @batch) to the nearest preferred batch size, or max_batch_size,
    by repeating its last row, for functions that only run on those sizes (as in PyTriton,
    the function returns outputs for the rows it was given before padding)."""
    @functools.wraps(wrapped)
    def infer(*args: Any, **kwargs: Any) -> Any:
        config = current()[1]
        inputs = {k: v for k, v in kwargs.items() if k != TRITON_CONTEXT_FIELD_NAME}
        count = len(next(iter(inputs.values())))
        preferred = (config.batcher.preferred_batch_size
                     if config.batcher is not None else None) or []
        sizes = sorted(preferred) + [config.max_batch_size]
        target = sizes[min(bisect_left(sizes, count), len(sizes) - 1)]
        for name, array in inputs.items():
            repeats = np.ones(count, np.int64)
            repeats[-1] += max(target - count, 0)
            kwargs[name] = np.repeat(array, repeats, axis=0)
        return wrapped(*args, **kwargs)

    return infer


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

    return _method_aware(decorate)


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

    return _method_aware(decorate)


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
