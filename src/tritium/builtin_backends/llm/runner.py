"""The model runner: a Hugging Face decoder-only model and its forward passes over the KV slots.

It plays the part of vLLM's model runner (or MindIE's model executor) under Triton's LLM
backends: it loads the model version folder as transformers saves it (config.json,
*.safetensors, tokenizer files), then runs two kinds of forward pass for the engine: a prefill
chunk of one sequence's prompt into its slot, and one decode step for every decoding sequence at
once. The attention mask is built here (4-D, so transformers uses it as given): each row sees
its own positions and nothing past its own length, which is what lets sequences of different
lengths share a step. transformers supplies the layers; scheduling, caching and sampling stay
in the engine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from .kv_cache import SlotCache, SlotStore

_DTYPES = {"float32": torch.float32, "float": torch.float32, "bfloat16": torch.bfloat16,
           "float16": torch.float16, "half": torch.float16}


class ModelRunner:
    """A loaded model (shared by the model's instances: weights are read-only). Its passes run
    under torch.inference_mode, which the engine thread holds."""

    def __init__(self, model: Any, tokenizer: Any, max_model_len: int) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.config = model.config
        self.max_model_len = max_model_len
        self.dtype = next(model.parameters()).dtype
        text = self.config.get_text_config(decoder=True)
        heads = text.num_attention_heads
        self.layers = text.num_hidden_layers
        self.kv_heads = getattr(text, "num_key_value_heads", None) or heads
        self.head_dim = getattr(text, "head_dim", None) or text.hidden_size // heads
        self.vocab_size = text.vocab_size

    @classmethod
    def load(cls, folder: Path, tokenizer_folder: Path, dtype: str, max_model_len: int | None
             ) -> ModelRunner:
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # no progress bars in the server's log
        config = AutoConfig.from_pretrained(folder, local_files_only=True)
        torch_dtype = torch.float32 if dtype == "auto" else _DTYPES[dtype]
        model = AutoModelForCausalLM.from_pretrained(
            folder, config=config, dtype=torch_dtype, attn_implementation="sdpa",
            local_files_only=True,
        ).eval()
        tokenizer = AutoTokenizer.from_pretrained(tokenizer_folder, local_files_only=True)
        text = config.get_text_config(decoder=True)
        limit = (getattr(text, "max_position_embeddings", None)
                 or getattr(text, "n_positions", None) or 2048)
        return cls(model, tokenizer, min(max_model_len or limit, limit))

    def new_store(self, rows: int) -> SlotStore:
        return SlotStore(self.layers, rows, self.kv_heads, self.head_dim, self.max_model_len,
                         self.dtype)

    def prefill(self, store: SlotStore, row: int, tokens: list[int], start: int) -> torch.Tensor:
        """Run `tokens` (prompt positions start.. of the sequence in `row`); the logits of the
        last one, shape [vocab]."""
        count = len(tokens)
        store.ensure(start + count)
        store.plan_prefill(row, start, count)
        positions = torch.arange(start, start + count)
        # Query i (at position start+i) sees every cached position up to its own.
        mask = (torch.arange(start + count)[None, :] <= positions[:, None])[None, None]
        output = self.model(
            input_ids=torch.tensor([tokens]), position_ids=positions[None], attention_mask=mask,
            cache=SlotCache(store), use_cache=True, logits_to_keep=1,
        )
        return output.logits[0, -1].float()

    def decode(self, store: SlotStore, tokens: list[int], lengths: list[int]) -> torch.Tensor:
        """One step for rows [0, len(tokens)): row i's last token at position lengths[i]; the
        next-token logits, shape [rows, vocab]."""
        rows = len(tokens)
        where = torch.tensor(lengths)
        store.ensure(int(where.max()) + 1)
        store.plan_decode(rows, where)
        mask = (torch.arange(store.read_length)[None, :] <= where[:, None])[:, None, None, :]
        output = self.model(
            input_ids=torch.tensor(tokens)[:, None], position_ids=where[:, None],
            attention_mask=mask, cache=SlotCache(store), use_cache=True, logits_to_keep=1,
        )
        return output.logits[:, -1].float()
