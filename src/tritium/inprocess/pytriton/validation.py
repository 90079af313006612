"""What a bound function returns, checked as PyTriton checks it before answering.

Always: a list of one dict per request, whose values are numpy arrays of a kind Triton carries
(bool, numbers, bytes; text as bytes, not str objects). With `bind(..., strict=True)` also: only
declared outputs, of the declared dtype and shape (the batch dimension aside, -1 any size).
A failure is the batch's error, its message naming the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .exceptions import PyTritonValidationError
from .model_config import Tensor, config_type


def check_results(model: str, results: Any, count: int, outputs: Sequence[Tensor],
                  batching: bool, strict: bool) -> Any:
    if not isinstance(results, list):
        raise PyTritonValidationError(
            f"Outputs returned by `{model}` model callable must be a list of response dicts "
            f"with numpy arrays, got {type(results).__name__}")
    if len(results) != count:
        raise PyTritonValidationError(
            f"Number of outputs returned by `{model}` inference callable ({len(results)}) does "
            f"not match the number of requests ({count})")
    declared = {t.name: t for t in outputs if t.name}
    for response in results:
        if not isinstance(response, dict):
            raise PyTritonValidationError(
                f"Outputs returned by `{model}` model callable must be dicts of numpy arrays, "
                f"got {type(response).__name__}")
        for name, value in response.items():
            _check_array(model, name, value)
            if strict:
                _check_declared(model, name, value, declared, batching)
    return results


def _check_array(model: str, name: Any, value: Any) -> None:
    if not isinstance(name, str):
        raise PyTritonValidationError(f"Not all keys returned by `{model}` model callable are "
                                      "strings")
    if not isinstance(value, np.ndarray):
        raise PyTritonValidationError(f"Output `{name}` of `{model}` model callable is not a "
                                      f"numpy array but {type(value).__name__}")
    if value.dtype.kind not in "biufOSU":
        raise PyTritonValidationError(
            f"Output `{name}` of `{model}` has dtype kind `{value.dtype.kind}`: only bool, "
            "numeric, bytes and string arrays are supported")
    if value.dtype.kind == "O" and value.size and not isinstance(value.flat[0], bytes):
        raise PyTritonValidationError(
            f"Output `{name}` of `{model}` holds {type(value.flat[0]).__name__} objects: "
            "object arrays must hold bytes")


def _check_declared(model: str, name: str, value: np.ndarray, declared: dict[str, Tensor],
                    batching: bool) -> None:
    spec = declared.get(name)
    if spec is None:
        raise PyTritonValidationError(
            f"Output `{name}` returned by `{model}` is not one of its outputs "
            f"({', '.join(declared)})")
    if config_type(value.dtype) != config_type(spec.dtype):
        raise PyTritonValidationError(
            f"Output `{name}` of `{model}` has dtype {value.dtype}, declared "
            f"{np.dtype(spec.dtype)}")
    shape = value.shape[1:] if batching else value.shape
    dims = tuple(spec.shape)
    if len(shape) != len(dims) or any(d not in (-1, s) for d, s in zip(dims, shape, strict=True)):
        raise PyTritonValidationError(
            f"Output `{name}` of `{model}` has shape {list(shape)} (batch aside), declared "
            f"{list(dims)}")
