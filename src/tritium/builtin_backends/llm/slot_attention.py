"""Attention for a forward pass that mixes sequences: decode tokens and prompt chunks together.

vLLM's scheduler fills each step with one token of every decoding sequence and, within the
step's token budget, chunks of the prompts waiting to be prefilled, and runs them as one forward
pass: a long prompt then delays the running streams by one step, not by a pass of its own
between two decode steps (under 32 streams with prompts arriving, the inter-token p99 was 6.7
times its p50 here when prefill chunks ran as passes of their own; 3.5 times once mixed). The
pass flattens every token of the step into one sequence axis (the linear layers, most of the
work, do not care which sequence a token belongs to); only attention must keep the sequences
apart, and transformers lets a model's attention be swapped for a registered function (its
AttentionInterface).

`slot_attention` is that function. The KV cache layer (kv_cache.py) has already written the
step's new keys and values into their rows and positions; the function then runs, per segment
of the step (every decoding row together, one query each; each prompt chunk, its row alone), the
model's own attention implementation (sdpa, or the model's eager function: Gemma-2's
soft-capping lives there) over that segment's rows of the KV slots, with the segment's mask
(attention_masks.py: causal, sliding windows per layer type), and puts the outputs back in the
step's token order.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from tritium.backend import TritonError

from .kv_cache import SlotStore

NAME = "tritium_slots"
# The keyword a model's forward passes on, through its layers, to the attention function.
PLAN_KEYWORD = "slot_plan"


@dataclass
class Segment:
    """Queries of the step (`tokens`, a slice of its token axis) over store `rows`: one query
    per row for the decoding rows, `tokens` consecutive positions of one row for a chunk."""

    tokens: slice
    rows: slice
    read_length: int  # key positions [0, read_length) of each row
    # Per attention type: [rows, 1, queries, read_length], or None where every key is seen.
    masks: dict[str, torch.Tensor | None]


@dataclass
class StepPlan:
    """What one forward pass's attention reads: the model's attention, the KV slots (the
    step's keys and values already written) and the step's segments."""

    attention: SlotAttention
    store: SlotStore
    segments: list[Segment]


class SlotAttention:
    """The attention of one loaded model over its KV slots; switches the model to it."""

    def __init__(self, model: Any, layer_kinds: list[str]) -> None:
        self.inner = _implementation(model, model.config._attn_implementation)
        self.layer_kinds = layer_kinds  # each layer's attention type (which mask it reads)
        model.set_attn_implementation(NAME)
        if model.config._attn_implementation != NAME:
            raise TritonError.invalid_arg(
                f"the llm backend cannot run {type(model).__name__}: its attention does not go "
                "through transformers' AttentionInterface, which the engine's batching needs"
            )

    def attend(self, module: Any, query: torch.Tensor, plan: StepPlan, kwargs: dict[str, Any]
               ) -> torch.Tensor:
        """The attention output [1, tokens, heads, dim] of the step's queries
        [1, heads, tokens, dim] in layer `module`."""
        layer = module.layer_idx
        keys, values = plan.store.keys[layer], plan.store.values[layer]
        kind = self.layer_kinds[layer]
        heads, dim = query.shape[1], query.shape[3]
        outputs = []
        for segment in plan.segments:
            rows = segment.rows.stop - segment.rows.start
            # [1, heads, rows * queries, dim] -> [rows, heads, queries, dim]
            queries = query[0, :, segment.tokens].reshape(heads, rows, -1, dim).transpose(0, 1)
            output, _ = self.inner(
                module, queries, keys[segment.rows, :, :segment.read_length],
                values[segment.rows, :, :segment.read_length], segment.masks[kind], **kwargs,
            )
            outputs.append(output.reshape(1, -1, heads, dim))
        return torch.cat(outputs, dim=1) if len(outputs) > 1 else outputs[0]


def _implementation(model: Any, implementation: str | None) -> Callable[..., Any]:
    """The function the model would attend with: transformers' sdpa, or the eager function of
    the model's own module (each family's eager attention is its own: soft-capping, sinks)."""
    if implementation == "sdpa":
        return sdpa_attention_forward
    if implementation in (None, "eager"):
        for module in model.modules():
            if hasattr(module, "layer_idx"):
                found = getattr(inspect.getmodule(type(module)), "eager_attention_forward", None)
                if found is not None:
                    return found
    raise TritonError.invalid_arg(
        f"the llm backend runs attention as sdpa or eager, not {implementation!r}; remove "
        "attn_implementation from the model's config.json"
    )


def slot_attention(module: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                   attention_mask: Any, **kwargs: Any) -> tuple[torch.Tensor, None]:
    """The registered attention function. `key` and `value` (the step's own) are already in
    the slots; `attention_mask` is a placeholder: each segment has its own."""
    plan: StepPlan = kwargs.pop(PLAN_KEYWORD)
    return plan.attention.attend(module, query, plan, kwargs), None


AttentionInterface.register(NAME, slot_attention)
