"""The llm engine's KV slots grow without stalling the running streams.

Growing once reallocated every layer's tensors and copied what they held (one step took 1 s
instead of 0.2 s at 32 sequences of 256 positions, the inter-token p99 of bench/llm_bench.py).
On the CPU the store now reserves max_model_len once and each growth zeroes only the new
positions; where the reservation does not fit in the machine's memory it grows by reallocation,
as on a GPU. Either way what was stored stays, and positions a pass may read but no token wrote
are zeros (garbage there would reach the masked-out softmax terms as NaN).
"""

from __future__ import annotations

import pytest
import torch

from tritium.builtin_backends.llm import kv_cache
from tritium.builtin_backends.llm.kv_cache import SlotStore


def _store(max_len: int = 1024) -> SlotStore:
    return SlotStore(layers=2, rows=3, kv_heads=2, head_dim=4, max_len=max_len,
                     dtype=torch.float32, device=torch.device("cpu"))


def _fill(store: SlotStore, length: int) -> None:
    for tensor in store.keys + store.values:
        tensor[:, :, :length] = torch.arange(1, length + 1, dtype=torch.float32)[:, None]


def _check(store: SlotStore, written: int) -> None:
    expected = torch.arange(1, written + 1, dtype=torch.float32)[:, None]
    for tensor in store.keys + store.values:
        assert torch.equal(tensor[:, :, :written], expected.expand(3, 2, written, 4))
        assert not tensor[:, :, written:store.capacity].any()


def test_the_cpu_store_reserves_once_and_grows_by_zeroing_new_positions() -> None:
    store = _store()
    store.ensure(10)
    assert (store.capacity, store.room) == (64, 1024)
    first = store.keys[0]
    _check(store, 0)
    _fill(store, 60)
    store.ensure(130)
    assert store.capacity == 192
    assert store.keys[0] is first, "the reserved tensors were reallocated"
    _check(store, 60)
    store.ensure(5000)  # past max_model_len: everything there is
    assert store.capacity == 1024
    _check(store, 60)


def test_without_room_for_a_reservation_the_store_reallocates_and_keeps_its_contents(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kv_cache.SlotStore, "_reservation_fits", lambda self: False)
    store = _store()
    store.ensure(10)
    assert (store.capacity, store.room) == (64, 64)
    _fill(store, 50)
    store.ensure(100)
    assert store.room == 128 and store.capacity == 128
    _check(store, 50)
    store.ensure(300)
    assert store.room == 300 and store.capacity == 300
    _check(store, 50)
