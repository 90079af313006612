"""Logits processors: logit_bias, vLLM's three penalties and a structured output's grammar
(guided_decoding.py), for the rows that ask for them.

vLLM's semantics (its sampler's apply_penalties): `repetition_penalty` divides the positive
logits and multiplies the negative ones of every token seen so far, in the prompt or the
output; `frequency_penalty` subtracts its value times how often a token came in the output,
`presence_penalty` its value once for any token that came in the output. `logit_bias` adds to
the logits of the tokens it names first. A sequence that uses none of them has no adjuster,
so the common request costs the step nothing; one that does keeps what it has seen as tensors
on the device, updated by one element per token instead of rebuilt from its history per step.
"""

from __future__ import annotations

from typing import Any

import torch

from .guided_decoding import GrammarConstraint
from .sampling import SamplingParams


class LogitsAdjuster:
    """One sequence's logit_bias, penalties and grammar, with the tokens it has seen."""

    def __init__(self, params: SamplingParams, prompt: list[int], vocab: int,
                 device: torch.device, grammar: Any = None) -> None:
        self.params = params
        # The compiled grammar of a structured output (the task compiled it on admission).
        self.constraint = GrammarConstraint(grammar, vocab) if grammar is not None else None
        self.bias: tuple[torch.Tensor, torch.Tensor] | None = None
        if params.logit_bias:
            ids, values = zip(*params.logit_bias.items(), strict=True)
            self.bias = (torch.tensor(ids, device=device),
                         torch.tensor(values, dtype=torch.float32, device=device))
        self.seen: torch.Tensor | None = None  # prompt or output, for repetition_penalty
        if params.repetition_penalty != 1:
            self.seen = torch.zeros(vocab, dtype=torch.bool, device=device)
            self.seen[torch.tensor(prompt, device=device)] = True
        self.counts: torch.Tensor | None = None  # output only, for the other two
        if params.presence_penalty != 0 or params.frequency_penalty != 0:
            self.counts = torch.zeros(vocab, dtype=torch.float32, device=device)

    @classmethod
    def create(cls, params: SamplingParams, prompt: list[int], vocab: int,
               device: torch.device, grammar: Any = None) -> LogitsAdjuster | None:
        """An adjuster for a sequence whose parameters need one, else None."""
        return cls(params, prompt, vocab, device, grammar) if params.adjusts_logits else None

    def add(self, token: int) -> None:
        """A token the sequence generated."""
        if self.seen is not None:
            self.seen[token] = True
        if self.counts is not None:
            self.counts[token] += 1
        if self.constraint is not None:
            self.constraint.add(token)

    def apply(self, logits: torch.Tensor) -> None:
        """Adjust one row of logits [vocab] in place."""
        if self.bias is not None:
            ids, values = self.bias
            logits.index_add_(0, ids, values)
        if self.seen is not None:
            penalty = self.params.repetition_penalty
            scaled = torch.where(logits > 0, logits / penalty, logits * penalty)
            logits.copy_(torch.where(self.seen, scaled, logits))
        if self.counts is not None:
            logits -= self.params.frequency_penalty * self.counts
            logits -= self.params.presence_penalty * (self.counts > 0)
        if self.constraint is not None:
            self.constraint.apply(logits)
