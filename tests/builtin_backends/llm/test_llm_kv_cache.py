"""The llm engine's KV slots grow without stalling the running streams.

Growing once reallocated every layer's tensors and copied what they held (one step took 1 s
instead of 0.2 s at 32 sequences of 256 positions, the inter-token p99 of bench/llm_bench.py).
On the CPU the store now reserves max_model_len once and each growth zeroes only the new
positions; where the reservation does not fit in the machine's memory it grows by reallocation,
as on a GPU. Either way what was stored stays, and positions a pass may read but no token wrote
are zeros (garbage there would reach the masked-out softmax terms as NaN).
"""

from __future__ import annotations

import os

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
    monkeypatch.setattr(kv_cache, "_PHYSICAL_MEMORY", 0)  # no room for a reservation
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


def _resident_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_a_reservation_costs_memory_only_for_the_positions_in_use() -> None:
    # 2 layers x 8 rows x 8 heads x 32,768 positions x 64 dims, keys and values: 2 GiB reserved.
    store = SlotStore(layers=2, rows=8, kv_heads=8, head_dim=64, max_len=32768,
                      dtype=torch.float32, device=torch.device("cpu"))
    before = _resident_mib()
    store.ensure(100)
    grown = _resident_mib() - before
    assert store.room == 32768 and store.capacity == 128
    # 128 positions of every row: 4 tensors x 8 x 8 x 128 x 64 floats = 8 MiB.
    assert grown < 64, f"the reservation made {grown:.0f} MiB resident for 8 MiB in use"
    store.keys[1][7, 7, 127] = 1.0  # the last position in use is writable
    assert store.keys[1][7, 7, 127].sum() == 64.0


def test_a_refused_reservation_falls_back_to_growing_by_reallocation(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(shape: object, dtype: object) -> None:
        raise OSError(12, "Cannot allocate memory")  # vm.overcommit_memory=2 says so

    monkeypatch.setattr(kv_cache, "_reserve", refused)
    store = _store()
    store.ensure(10)
    assert (store.capacity, store.room) == (64, 64)
    _fill(store, 40)
    store.ensure(70)
    assert store.room == 128
    _check(store, 40)
