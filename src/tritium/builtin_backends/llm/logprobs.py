"""Logprobs of sampled and prompt tokens, as vLLM returns them by default: the log-softmax of the
model's raw logits (before logit_bias, penalties, temperature or any cut), with each token's rank
and the most likely tokens of its position.

They travel in the `logprobs` and `prompt_logprobs` outputs as JSON in vLLM's own shape, one
entry per token: `{"<token id>": {"logprob": ..., "rank": ..., "decoded_token": ...}, ...}`,
the token itself first, then the top ones by rank (the token appears once when it is among
them). The prompt's first token has no logprob: its entry holds it with `logprob` and `rank`
null (vLLM sends null for the whole entry; the token's text is what an echo needs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

# The logprob written for an impossible token (-inf has no JSON form; OpenAI's value).
_FLOOR = -9999.0


@dataclass
class TokenLogprobs:
    """One position's: the token, its logprob and rank, and the top (token, logprob) pairs."""

    token: int
    logprob: float | None
    rank: int | None
    top: list[tuple[int, float]]


def logprobs_of(logits: torch.Tensor, tokens: list[int], tops: list[int]) -> list[TokenLogprobs]:
    """Row i of raw logits [rows, vocab]: the logprob and rank of tokens[i] and its tops[i]
    likeliest tokens. Read back to the host once per kind of value."""
    logprobs = torch.log_softmax(logits.float(), dim=-1)
    chosen_ids = torch.tensor(tokens, device=logits.device)[:, None]
    chosen = logprobs.gather(1, chosen_ids)
    ranks = ((logprobs > chosen).sum(dim=-1) + 1).tolist()
    most = max(tops)
    values: list[list[float]] = [[] for _ in tokens]
    ids: list[list[int]] = [[] for _ in tokens]
    if most:
        top_values, top_ids = logprobs.topk(most, dim=-1)
        values, ids = top_values.tolist(), top_ids.tolist()
    return [
        TokenLogprobs(token, value, rank, list(zip(row_ids[:count], row_values[:count],
                                                   strict=True)))
        for token, value, rank, row_ids, row_values, count in zip(
            tokens, chosen[:, 0].tolist(), ranks, ids, values, tops, strict=True)
    ]


def to_json(entries: list[TokenLogprobs], decode: Callable[[int], str]) -> list[dict[str, Any]]:
    """vLLM's shape of a list of positions (see the module's docstring)."""
    return [_entry(item, decode) for item in entries]


def _entry(item: TokenLogprobs, decode: Callable[[int], str]) -> dict[str, Any]:
    entry = {str(item.token): {"logprob": _finite(item.logprob), "rank": item.rank,
                               "decoded_token": decode(item.token)}}
    for rank, (token, logprob) in enumerate(item.top, start=1):
        entry.setdefault(str(token), {"logprob": _finite(logprob), "rank": rank,
                                      "decoded_token": decode(token)})
    return entry


def _finite(value: float | None) -> float | None:
    return None if value is None else max(value, _FLOOR)
