"""Sampling parameters and the sampler: vLLM's SamplingParams, as Triton's vLLM backend takes them.

A request's `sampling_parameters` input (a JSON object as a string), or else its request
parameters, name the keys of vLLM's SamplingParams; values may arrive as strings (request
parameters often do) and are converted to each key's type, as the vLLM backend's
TritonSamplingParams.from_dict does. Defaults are vLLM's: temperature 1.0 (sampling), top_p 1.0,
top_k off, min_p off, max_tokens 16, no penalties. temperature 0 is greedy. A `seed` gives the
request its own random generator, so the same seed gives the same sample whatever else is running.
The sampler follows vLLM's order: logit_bias, the penalties and a structured output's grammar
(processors.py, guided_decoding.py) change the logits of the rows that ask for them; greedy
rows take the argmax of those; the others are divided by their temperature, cut by min_p, then
top-k and top-p, and drawn. Logprobs (logprobs.py) are
always those of the raw logits, as vLLM's default. Keys this engine does not implement are
refused by name rather than silently ignored; `best_of` is taken when it equals `n` (clients of
vLLM's V0 engine send it: Triton's OpenAI frontend 2.52 sends `best_of: 1`).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from tritium.backend import TritonError

from .guided_decoding import KEYS as GUIDED_KEYS
from .guided_decoding import GuidedSpec, parse_guided

# Below this temperature decoding is greedy (vLLM's _SAMPLING_EPS).
_GREEDY_BELOW = 1e-5
# The most top logprobs a request may ask for per token (vLLM's default max_logprobs).
MAX_LOGPROBS = 20
# Stop strings are matched against every token's text; vLLM sets no bound, so one request could
# make every step of the engine slow. 64 Ki characters is far beyond any real use.
MAX_STOP_CHARACTERS = 65536
# A seed is a 64-bit signed integer (vLLM's OpenAI protocol bounds it to torch.long's range;
# torch.Generator.manual_seed takes no other).
SEED_RANGE = (-2**63, 2**63 - 1)
_FLOATS = ("temperature", "top_p", "min_p", "presence_penalty", "frequency_penalty",
           "repetition_penalty")


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
    min_p: float = 0.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repetition_penalty: float = 1.0
    logit_bias: dict[int, float] = field(default_factory=dict)
    logprobs: int | None = None  # top logprobs per output token (0: the sampled one's only)
    prompt_logprobs: int | None = None  # the same for every prompt token
    guided: GuidedSpec | None = None  # structured outputs: JSON, or JSON of a schema

    @property
    def greedy(self) -> bool:
        return self.temperature < _GREEDY_BELOW

    @property
    def adjusts_logits(self) -> bool:
        """Whether the row's logits change before sampling (logit_bias, a penalty or a
        grammar)."""
        return bool(self.logit_bias) or self.presence_penalty != 0 \
            or self.frequency_penalty != 0 or self.repetition_penalty != 1 \
            or self.guided is not None

    def validate(self) -> None:
        # NaN passes every comparison below and an infinity divides the logits into NaN:
        # either would fail the engine's whole step (every sequence in it), not one request.
        for name in _FLOATS:
            if not math.isfinite(getattr(self, name)):
                raise TritonError.invalid_arg(
                    f"{name} must be a finite number, got {getattr(self, name)}")
        if any(not math.isfinite(bias) for bias in self.logit_bias.values()):
            raise TritonError.invalid_arg("logit_bias values must be finite numbers")
        if self.seed is not None and not SEED_RANGE[0] <= self.seed <= SEED_RANGE[1]:
            raise TritonError.invalid_arg(
                f"seed must be between {SEED_RANGE[0]} and {SEED_RANGE[1]} (a 64-bit "
                f"integer), got {self.seed}")
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
        characters = sum(len(s) for s in self.stop)
        if characters > MAX_STOP_CHARACTERS:
            raise TritonError.invalid_arg(
                f"stop strings may hold at most {MAX_STOP_CHARACTERS} characters in all, got "
                f"{characters}: send fewer or shorter stop strings"
            )
        if not 0 <= self.min_p <= 1:
            raise TritonError.invalid_arg(f"min_p must be in [0, 1], got {self.min_p}.")
        for name in ("presence_penalty", "frequency_penalty"):
            if not -2 <= getattr(self, name) <= 2:
                raise TritonError.invalid_arg(
                    f"{name} must be in [-2, 2], got {getattr(self, name)}."
                )
        if self.repetition_penalty <= 0:
            raise TritonError.invalid_arg(
                f"repetition_penalty must be greater than zero, got {self.repetition_penalty}."
            )
        for name in ("logprobs", "prompt_logprobs"):
            count = getattr(self, name)
            if count is not None and not 0 <= count <= MAX_LOGPROBS:
                raise TritonError.invalid_arg(
                    f"{name} must be between 0 and {MAX_LOGPROBS} (the most this server "
                    f"returns per token), got {count}"
                )


_FIELDS: dict[str, type] = {
    "n": int, "temperature": float, "top_p": float, "top_k": int, "seed": int,
    "max_tokens": int, "min_tokens": int, "ignore_eos": bool,
    "include_stop_str_in_output": bool, "skip_special_tokens": bool, "min_p": float,
    "presence_penalty": float, "frequency_penalty": float, "repetition_penalty": float,
    "logprobs": int, "prompt_logprobs": int,
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
    best_of = None
    for key, value in values.items():
        if value is None:
            continue
        if key == "logprobs" and isinstance(value, bool):
            # OpenAI chat's flag, which Triton's OpenAI frontend (2.52) passes on as it is:
            # false asks for none, true for the sampled token's own (as vLLM's server reads it).
            params.logprobs = 0 if value else None
        elif key in _FIELDS:
            setattr(params, key, _convert(key, value, _FIELDS[key]))
        elif key == "best_of":
            best_of = _convert(key, value, int)
        elif key == "stop":
            params.stop = _strings(key, value)
        elif key == "stop_token_ids":
            params.stop_token_ids = [_convert(key, v, int) for v in _list(key, value)]
        elif key == "logit_bias":
            params.logit_bias = _bias(value)
        elif key in GUIDED_KEYS:
            params.guided = parse_guided(key, _object(key, value, "an object"))
        else:
            unknown.append(key)
    if unknown:
        supported = ", ".join(sorted([*_FIELDS, "best_of", "stop", "stop_token_ids",
                                      "logit_bias", *GUIDED_KEYS]))
        raise TritonError.invalid_arg(
            f"unsupported sampling parameter(s) {', '.join(sorted(unknown))}; the llm backend "
            f"supports {supported}"
        )
    if best_of is not None and best_of != params.n:
        # vLLM's V0 engine sampled best_of sequences and answered the n best; V1 dropped it.
        raise TritonError.invalid_arg(
            f"best_of must be n ({params.n}), got {best_of}: the llm backend answers every "
            "sequence it samples")
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


def _object(key: str, value: Any, what: str) -> dict[str, Any]:
    """An object-valued parameter, given as an object or as its JSON text."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            value = None
    if not isinstance(value, dict):
        raise TritonError.invalid_arg(f"sampling parameter '{key}' must be {what}")
    return value


def _bias(value: Any) -> dict[int, float]:
    """logit_bias: {token id: bias}, the ids as JSON object keys (strings) or integers."""
    value = _object("logit_bias", value, "an object of token id -> bias")
    return {_convert("logit_bias", key, int): _convert("logit_bias", bias, float)
            for key, bias in value.items()}


def request_generator(params: SamplingParams, seeds: random.Random,
                      device: torch.device) -> torch.Generator | None:
    """The request's own random generator, on the device its logits are on: from its seed,
    else from the engine's seeds."""
    if params.greedy:
        return None
    seed = params.seed if params.seed is not None else seeds.getrandbits(63)
    return torch.Generator(device=device).manual_seed(seed)


class Adjuster(Protocol):
    """A row's logits processors (processors.LogitsAdjuster)."""

    def apply(self, logits: torch.Tensor) -> None: ...


class SampledRow(Protocol):
    """What the sampler needs of a row (the engine's Sequence)."""

    @property
    def params(self) -> SamplingParams: ...

    @property
    def generator(self) -> torch.Generator | None: ...

    @property
    def adjuster(self) -> Adjuster | None: ...


def sample(logits: torch.Tensor, rows: Sequence[SampledRow]) -> list[int]:
    """The next token of each row of logits [rows, vocab], row i drawn with rows[i]'s
    parameters. Every row is picked where the logits are; the picks come back to the host in
    one copy. `logits` is left as it is (its raw values give the logprobs)."""
    adjusters = [(i, row.adjuster) for i, row in enumerate(rows) if row.adjuster is not None]
    if adjusters:
        logits = logits.clone()
        for i, adjuster in adjusters:
            adjuster.apply(logits[i])
    picked = torch.argmax(logits, dim=-1)  # the greedy rows' tokens; the others replaced
    for i, row in enumerate(rows):
        if not row.params.greedy:
            picked[i] = _draw(logits[i], row.params, row.generator)
    return picked.tolist()


def _draw(logits: torch.Tensor, params: SamplingParams,
          generator: torch.Generator | None) -> torch.Tensor:
    """A token drawn from one row of logits [vocab] (temperature, min-p, top-k, top-p), as a
    tensor of one element on the logits' device."""
    # A small temperature or an extreme repetition_penalty can scale logits past float range:
    # infinities become the largest finite values (and NaN the smallest), so softmax stays a
    # distribution and multinomial never fails the step.
    logits = torch.nan_to_num(logits / params.temperature, nan=torch.finfo(logits.dtype).min)
    if params.min_p > 0:
        probabilities = torch.softmax(logits, dim=-1)
        # Drop the tokens less likely than min_p times the likeliest one.
        logits = logits.masked_fill(probabilities < params.min_p * probabilities.max(),
                                    float("-inf"))
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
