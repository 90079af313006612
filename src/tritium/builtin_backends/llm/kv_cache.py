"""The KV cache of one engine: a slot (a row of per-layer key/value tensors) per running sequence.

Triton's LLM backends (vLLM's paged cache, TensorRT-LLM's KV cache manager, MindIE's block
manager) keep each running sequence's attention keys and values between decode steps so a step
costs one token per sequence. Here every layer holds one key and one value tensor shaped
[max_num_seqs, kv_heads, capacity, head_dim]; a sequence owns one row (its slot) from admission
to retirement and its tokens sit at positions 0..length-1 of that row. Sequences of different
lengths decode together: the step's attention mask hides, per row, the positions past the row's
own length. Capacity (the positions a pass may read, written or zeroed) grows in steps of 64 as
the longest sequence grows, so memory follows what is running rather than the worst case. The
tensors live on the runner's device (a KIND_GPU instance's cache is GPU memory), and so does
every index a pass writes with.

Growing must not stall the running streams. Reallocating (a new tensor, the old positions
copied in) took one step from 0.2 s to 1 s on the CPU at 32 sequences of 256 positions
(bench/llm_bench.py), which was that run's inter-token p99. So on the CPU the tensors are
reserved once at max_model_len: address space only (a mapping of their own, backed page by
page as it is first touched), and a growth step zeroes just the 64 new positions of each row.
On a GPU, where a reservation is real memory, or where the kernel refuses the address space
(strict overcommit), room still doubles by reallocation.

The engine keeps the sequences that are decoding in rows [0, decoding) and the ones still
prefilling after them, moving rows as sequences finish prefill or retire, so a step's decode
tokens read one contiguous slice and never gather.

`SlotCache` is the transformers `Cache` of one forward pass: its layers write the pass's new
keys and values at each token's row and position (one indexed write per layer, the tokens of
every sequence in the step at once); attention then reads the slots (slot_attention.py).
"""

from __future__ import annotations

import math
import mmap
import os
from typing import Any

import torch
from transformers.cache_utils import Cache, CacheLayerMixin

_GROWTH_STEP = 64
_PHYSICAL_MEMORY = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


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
        self.capacity = 0  # positions [0, capacity) of every row hold keys/values or zeros
        self.room = 0  # positions the tensors have
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []

    def ensure(self, length: int) -> None:
        """Room for `length` positions in every row (keeps what is stored)."""
        if length <= self.capacity:
            return
        if length > self.room:
            self._reallocate(length)
        capacity = min(-(-length // _GROWTH_STEP) * _GROWTH_STEP, self.room)
        for tensor in self.keys + self.values:
            tensor[:, :, self.capacity:capacity].zero_()
        self.capacity = capacity

    def _reallocate(self, length: int) -> None:
        """New tensors with room for `length` positions or more, the stored ones copied in."""
        shape = (self.rows, self.kv_heads, self.max_len, self.head_dim)
        # A reservation past the machine's memory could be refused, or overcommit it once used.
        size = 2 * self.layers * math.prod(shape) * self.dtype.itemsize
        if self.device.type == "cpu" and size <= _PHYSICAL_MEMORY:
            try:
                reserved = [_reserve(shape, self.dtype) for _ in range(2 * self.layers)]
            except OSError:  # address space refused (strict overcommit): grow as on a GPU
                pass
            else:
                self._replace(reserved, self.max_len)
                return
        room = min(max(length, 2 * self.room, _GROWTH_STEP), self.max_len)
        shape = (self.rows, self.kv_heads, room, self.head_dim)
        self._replace([torch.empty(shape, dtype=self.dtype, device=self.device)
                       for _ in range(2 * self.layers)], room)

    def _replace(self, tensors: list[torch.Tensor], room: int) -> None:
        """Keys then values of every layer: `tensors`, what is stored copied in."""
        for old, new in zip(self.keys + self.values, tensors, strict=False):
            new[:, :, :self.capacity].copy_(old[:, :, :self.capacity])
        self.keys, self.values = tensors[:self.layers], tensors[self.layers:]
        self.room = room

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

    def write(self, layer: int, rows: torch.Tensor, positions: torch.Tensor,
              key: torch.Tensor, value: torch.Tensor) -> None:
        """A forward pass's new keys and values [1, kv_heads, tokens, head_dim] into layer
        `layer`: token i at row rows[i], position positions[i] (index tensors on the store's
        device)."""
        self.keys[layer][rows, :, positions] = key[0].transpose(0, 1).to(self.dtype)
        self.values[layer][rows, :, positions] = value[0].transpose(0, 1).to(self.dtype)


def _reserve(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """A CPU tensor of `shape` backed by memory only where it is touched: an anonymous private
    mapping of its own (whatever allocator the process runs with), kept out of transparent huge
    pages. Each row's first positions sit megabytes apart, and under THP "always" touching each
    would back 2 MiB of it: hundreds of times what the positions in use need."""
    count = math.prod(shape)
    region = mmap.mmap(-1, count * dtype.itemsize, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                       prot=mmap.PROT_READ | mmap.PROT_WRITE)
    region.madvise(mmap.MADV_NOHUGEPAGE)
    # The tensor holds the mapping (frombuffer keeps its buffer alive), unmapped with it.
    return torch.frombuffer(region, dtype=dtype, count=count).view(shape)


class _SlotLayer(CacheLayerMixin):
    """One model layer's view of the store (what the attention modules call)."""

    is_sliding = False
    is_croppable = False

    def __init__(self, cache: SlotCache, index: int) -> None:
        super().__init__()
        self.cache = cache
        self.index = index
        self.is_initialized = True

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        return None

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any,
               **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        cache = self.cache
        cache.store.write(self.index, cache.rows, cache.positions, key_states, value_states)
        return key_states, value_states  # attention reads the slots (slot_attention.py)

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.cache.store.capacity, 0

    def get_seq_length(self) -> int:
        return self.cache.store.capacity

    def get_max_length(self) -> int:
        return self.cache.store.max_len


class SlotCache(Cache):
    """The transformers Cache handed to one forward pass: where its tokens write."""

    def __init__(self, store: SlotStore, rows: torch.Tensor, positions: torch.Tensor) -> None:
        self.store = store
        self.rows = rows
        self.positions = positions
        super().__init__(layers=[_SlotLayer(self, i) for i in range(store.layers)])
