"""Sampling parameters and the sampler: vLLM's SamplingParams, as Triton's vLLM backend takes them.

A request's `sampling_parameters` input (a JSON object as a string), or else its request
parameters, name the keys of vLLM's SamplingParams; values may arrive as strings (request
parameters often do) and are converted to each key's type, as the vLLM backend's
TritonSamplingParams.from_dict does. Defaults are vLLM's: temperature 1.0 (sampling), top_p 1.0,
top_k off, max_tokens 16. temperature 0 is greedy. A `seed` gives the request its own random
generator, so the same seed gives the same sample whatever else is running. Keys this engine does
not implement are refused by name rather than silently ignored.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

import torch

from tritium.backend import TritonError

# Below this temperature decoding is greedy (vLLM's _SAMPLING_EPS).
_GREEDY_BELOW = 1e-5


@dataclass
class SamplingParams:
    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    seed: int | None = None
    max_tokens: int | None = 16
    min_tokens: int = 0
    stop: list[str] = field(default_factory=list)
    stop_token_ids: list[int] = field(default_factory=list)
    ignore_eos: bool = False
    include_stop_str_in_output: bool = False
    skip_special_tokens: bool = True

    @property
    def greedy(self) -> bool:
        return self.temperature < _GREEDY_BELOW

    def validate(self) -> None:
        if self.n != 1:
            raise TritonError.invalid_arg(
                f"n must be 1, got {self.n}: the llm backend returns one sequence per request"
            )
        if self.temperature < 0:
            raise TritonError.invalid_arg(
                f"temperature must be non-negative, got {self.temperature}"
            )
        if not 0 < self.top_p <= 1:
            raise TritonError.invalid_arg(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k == 0 or self.top_k < -1:
            raise TritonError.invalid_arg(
                f"top_k must be -1 (disable), or at least 1, got {self.top_k}"
            )
        if self.max_tokens is not None and self.max_tokens < 1:
            raise TritonError.invalid_arg(
                f"max_tokens must be at least 1, got {self.max_tokens}"
            )
        if self.min_tokens < 0:
            raise TritonError.invalid_arg(
                f"min_tokens must be greater than or equal to 0, got {self.min_tokens}"
            )
        if any(not s for s in self.stop):
            raise TritonError.invalid_arg("stop cannot contain an empty string")


_FIELDS: dict[str, type] = {
    "n": int, "temperature": float, "top_p": float, "top_k": int, "seed": int,
    "max_tokens": int, "min_tokens": int, "ignore_eos": bool,
    "include_stop_str_in_output": bool, "skip_special_tokens": bool,
}


def parse_sampling_parameters(source: str | dict[str, Any]) -> SamplingParams:
    """SamplingParams from the JSON text of `sampling_parameters` or a parameters dict."""
    if isinstance(source, str):
        try:
            values = json.loads(source) if source.strip() else {}
        except json.JSONDecodeError as exc:
            raise TritonError.invalid_arg(
                f"sampling_parameters is not valid JSON: {exc}"
            ) from None
        if not isinstance(values, dict):
            raise TritonError.invalid_arg("sampling_parameters must be a JSON object")
    else:
        values = source
    params = SamplingParams()
    unknown = []
    for key, value in values.items():
        if value is None:
            continue
        if key in _FIELDS:
            setattr(params, key, _convert(key, value, _FIELDS[key]))
        elif key == "stop":
            params.stop = _strings(key, value)
        elif key == "stop_token_ids":
            params.stop_token_ids = [_convert(key, v, int) for v in _list(key, value)]
        else:
            unknown.append(key)
    if unknown:
        supported = ", ".join(sorted([*_FIELDS, "stop", "stop_token_ids"]))
        raise TritonError.invalid_arg(
            f"unsupported sampling parameter(s) {', '.join(sorted(unknown))}; the llm backend "
            f"supports {supported}"
        )
    params.validate()
    return params


def _convert(key: str, value: Any, kind: type) -> Any:
    try:
        if kind is bool:
            if isinstance(value, str):
                lowered = value.strip().lower()
                if lowered not in ("true", "false", "1", "0"):
                    raise ValueError(value)
                return lowered in ("true", "1")
            return bool(value)
        if kind is int:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            if isinstance(value, bool):
                raise ValueError(value)
            return int(float(value)) if isinstance(value, str) and "." in value else int(value)
        return kind(value)
    except (TypeError, ValueError):
        raise TritonError.invalid_arg(
            f"sampling parameter '{key}' must be {kind.__name__}, got {value!r}"
        ) from None


def _list(key: str, value: Any) -> list[Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return [value]
    if not isinstance(value, list):
        value = [value]
    return value


def _strings(key: str, value: Any) -> list[str]:
    items = [value] if isinstance(value, str) else _list(key, value)
    if not all(isinstance(v, str) for v in items):
        raise TritonError.invalid_arg(f"sampling parameter '{key}' must be a list of strings")
    return items


def request_generator(params: SamplingParams, seeds: random.Random,
                      device: torch.device) -> torch.Generator | None:
    """The request's own random generator, on the device its logits are on: from its seed,
    else from the engine's seeds."""
    if params.greedy:
        return None
    seed = params.seed if params.seed is not None else seeds.getrandbits(63)
    return torch.Generator(device=device).manual_seed(seed)


def sample(logits: torch.Tensor, params: list[SamplingParams],
           generators: list[torch.Generator | None]) -> list[int]:
    """The next token of each row of logits [rows, vocab], row i drawn with params[i]. Every
    row is picked where the logits are; the picks come back to the host in one copy."""
    picked = torch.argmax(logits, dim=-1)  # the greedy rows' tokens; the others replaced
    for row, (row_params, generator) in enumerate(zip(params, generators, strict=True)):
        if not row_params.greedy:
            picked[row] = _draw(logits[row], row_params, generator)
    return picked.tolist()


def _draw(logits: torch.Tensor, params: SamplingParams,
          generator: torch.Generator | None) -> torch.Tensor:
    """A token drawn from one row of logits [vocab] (temperature, top-k, top-p), as a tensor
    of one element on the logits' device."""
    logits = logits / params.temperature
    if 0 < params.top_k < logits.shape[-1]:
        threshold = torch.topk(logits, params.top_k).values[-1]
        logits = logits.masked_fill(logits < threshold, float("-inf"))
    if params.top_p < 1.0:
        ordered, order = torch.sort(logits, descending=True)
        cumulative = torch.softmax(ordered, dim=-1).cumsum(dim=-1)
        # Drop a token when the ones before it already reach top_p (the first always stays).
        drop = (cumulative - torch.softmax(ordered, dim=-1)) >= params.top_p
        logits = logits.scatter(0, order, ordered.masked_fill(drop, float("-inf")))
    probabilities = torch.softmax(logits, dim=-1)
    return torch.multinomial(probabilities, 1, generator=generator)[0]
