"""The attention masks of the runner's forward passes, as the model's attention functions read them.

Each segment of a step (slot_attention.py) attends over rows of the KV slots whose sequences
sit at different lengths, so the masks transformers would have built are built here: which key
positions each query sees, per attention type of the model's layers (`full_attention`: every
position up to its own; `sliding_attention`: the last `sliding_window` of them, as Mistral,
Phi-3 and Gemma-2 layers attend), in the format the model's attention implementation reads
(sdpa: booleans; eager, which soft-capping models such as Gemma-2 use: 0 or the dtype's
minimum, added to the scores). A model whose layers mix types gets one mask per type; other
types are refused at load.
"""

from __future__ import annotations

from typing import Any

import torch

from tritium.backend import TritonError

_KNOWN_TYPES = ("full_attention", "sliding_attention")


class AttentionMasks:
    """The mask builder of one loaded model."""

    def __init__(self, config: Any, dtype: torch.dtype) -> None:
        text = config.get_text_config(decoder=True)
        implementation = getattr(config, "_attn_implementation", None) or "eager"
        window = getattr(text, "sliding_window", None)
        layer_types = getattr(text, "layer_types", None)
        # Without per-layer types a configured window applies to every layer (Mistral, Phi-3).
        types = set(layer_types) if layer_types else (
            {"sliding_attention"} if window else {"full_attention"})
        unknown = sorted(types - set(_KNOWN_TYPES))
        if unknown:
            raise TritonError.invalid_arg(
                f"the llm backend does not run layers of attention type {', '.join(unknown)} "
                f"({type(text).__name__}); it runs {' and '.join(_KNOWN_TYPES)}"
            )
        self.windows = {kind: window if kind == "sliding_attention" else None for kind in types}
        # Each layer's type: which of the masks its attention reads.
        self.layer_kinds = list(layer_types) if layer_types else \
            [next(iter(types))] * text.num_hidden_layers
        self.additive = implementation == "eager"
        self.dtype = dtype

    def build(self, query_positions: torch.Tensor, key_length: int, last: bool = False
              ) -> dict[str, torch.Tensor | None]:
        """Per attention type, the mask for queries at `query_positions` ([rows, queries],
        each row's positions in its own slot) over key positions [0, key_length):
        [rows, 1, queries, key_length]. `last`: one query, at key_length - 1 (a decoding
        row attended alone); a type that then sees every key gets None: no mask for the
        kernel to build and read."""
        keys = torch.arange(key_length, device=query_positions.device)[None, None, :]
        queries = query_positions[:, :, None]
        return {kind: None if last and (window is None or window >= key_length)
                else self._format(self._visible(keys, queries, window))
                for kind, window in self.windows.items()}

    @staticmethod
    def _visible(keys: torch.Tensor, queries: torch.Tensor, window: int | None
                 ) -> torch.Tensor:
        visible = keys <= queries
        if window is not None:
            visible &= keys > queries - window
        return visible[:, None]

    def _format(self, visible: torch.Tensor) -> torch.Tensor:
        if not self.additive:
            return visible
        additive = torch.zeros(visible.shape, dtype=self.dtype, device=visible.device)
        return additive.masked_fill_(~visible, torch.finfo(self.dtype).min)
