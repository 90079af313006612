"""The KV cache of one engine: a slot (a row of per-layer key/value tensors) per running sequence.

Triton's LLM backends (vLLM's paged cache, TensorRT-LLM's KV cache manager, MindIE's block
manager) keep each running sequence's attention keys and values between decode steps so a step
costs one token per sequence. Here every layer holds one key and one value tensor shaped
[max_num_seqs, kv_heads, capacity, head_dim]; a sequence owns one row (its slot) from admission
to retirement and its tokens sit at positions 0..length-1 of that row. Sequences of different
lengths decode together: the step's attention mask hides, per row, the positions past the row's
own length. Capacity grows (doubling, up to max_model_len) as the longest sequence grows, so
memory follows what is running rather than the worst case. The tensors live on the runner's
device (a KIND_GPU instance's cache is GPU memory), and so does every index a pass writes with.

The engine keeps the sequences that are decoding in rows [0, decoding) and the ones still
prefilling after them, moving rows as sequences finish prefill or retire, so a decode step reads
one contiguous slice and never gathers.

`SlotCache` is a transformers `Cache` whose layers write a forward pass's new keys and values
into the planned rows and positions and hand back the rows' keys and values up to the longest
one; the forward pass is told its rows and positions through `plan_decode`/`plan_prefill`.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers.cache_utils import Cache, CacheLayerMixin

_GROWTH_STEP = 64


class SlotStore:
    """The per-layer key/value tensors and their capacity."""

    def __init__(self, layers: int, rows: int, kv_heads: int, head_dim: int,
                 max_len: int, dtype: torch.dtype, device: torch.device) -> None:
        self.layers = layers
        self.rows = rows
        self.kv_heads = kv_heads
        self.head_dim = head_dim
        self.max_len = max_len
        self.dtype = dtype
        self.device = device
        self.capacity = 0
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []
        # The plan of the forward pass being run: a row slice and where each row writes.
        self.row_slice = slice(0, 0)
        self.write_index: torch.Tensor | None = None  # decode: one position per row
        self.row_index = torch.arange(rows, device=device)  # decode: the rows written, sliced
        self.write_start = 0  # prefill: one row, a run of positions from here
        self.read_length = 0

    def ensure(self, length: int) -> None:
        """Room for `length` positions in every row (keeps what is stored)."""
        if length <= self.capacity:
            return
        capacity = min(max(length, 2 * self.capacity, _GROWTH_STEP), self.max_len)
        shape = (self.rows, self.kv_heads, capacity, self.head_dim)
        keys = [torch.zeros(shape, dtype=self.dtype, device=self.device)
                for _ in range(self.layers)]
        values = [torch.zeros(shape, dtype=self.dtype, device=self.device)
                  for _ in range(self.layers)]
        if self.capacity:
            for old, new in zip(self.keys + self.values, keys + values, strict=True):
                new[:, :, : self.capacity].copy_(old)
        self.keys, self.values, self.capacity = keys, values, capacity

    def move_row(self, source: int, target: int, length: int) -> None:
        """Copy the first `length` positions of row `source` into row `target`."""
        if source == target or length == 0:
            return
        for tensor in self.keys + self.values:
            tensor[target, :, :length].copy_(tensor[source, :, :length])

    def swap_rows(self, first: int, second: int, length: int) -> None:
        if first == second or length == 0:
            return
        for tensor in self.keys + self.values:
            saved = tensor[first, :, :length].clone()
            tensor[first, :, :length].copy_(tensor[second, :, :length])
            tensor[second, :, :length].copy_(saved)

    def plan_decode(self, rows: int, lengths: torch.Tensor, read_length: int) -> None:
        """The next forward decodes one token for each of rows [0, rows), written at `lengths`
        (on the store's device); `read_length` is lengths' maximum + 1, which the caller knows
        without reading `lengths` back from the device."""
        self.row_slice = slice(0, rows)
        self.write_index = lengths
        self.read_length = read_length

    def plan_prefill(self, row: int, start: int, count: int) -> None:
        """The next forward writes `count` prompt tokens of row `row` from position `start`."""
        self.row_slice = slice(row, row + 1)
        self.write_index = None
        self.write_start = start
        self.read_length = start + count

    def update(self, layer: int, key: torch.Tensor, value: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor]:
        keys, values = self.keys[layer][self.row_slice], self.values[layer][self.row_slice]
        if self.write_index is not None:
            rows = self.row_index[: keys.shape[0]]
            keys[rows, :, self.write_index] = key[:, :, 0].to(self.dtype)
            values[rows, :, self.write_index] = value[:, :, 0].to(self.dtype)
        else:
            end = self.write_start + key.shape[2]
            keys[:, :, self.write_start:end] = key
            values[:, :, self.write_start:end] = value
        return keys[:, :, : self.read_length], values[:, :, : self.read_length]


class _SlotLayer(CacheLayerMixin):
    """One model layer's view of the store (what the attention modules call)."""

    is_sliding = False
    is_croppable = False

    def __init__(self, store: SlotStore, index: int) -> None:
        super().__init__()
        self.store = store
        self.index = index
        self.is_initialized = True

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        return None

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any,
               **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        return self.store.update(self.index, key_states, value_states)

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.store.read_length, 0

    def get_seq_length(self) -> int:
        return self.store.read_length

    def get_max_length(self) -> int:
        return self.store.max_len


class SlotCache(Cache):
    """The transformers Cache handed to the model's forward pass."""

    def __init__(self, store: SlotStore) -> None:
        super().__init__(layers=[_SlotLayer(store, i) for i in range(store.layers)])
        self.store = store
