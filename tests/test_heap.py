"""heap.settle freezes what the server holds at start; heap.release lets the collector free the
cycles among frozen objects the server has let go of (an unloaded model), so freezing leaks
nothing; and once settled, young objects are collected less often, but still collected."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from tritium import heap


@pytest.fixture(autouse=True)
def _collector() -> Iterator[None]:
    """The collector as the test found it: nothing frozen, its thresholds."""
    threshold = gc.get_threshold()
    yield
    gc.set_threshold(*threshold)
    gc.unfreeze()


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_release_collects_cycles_that_were_frozen() -> None:
    first, second = _Node(), _Node()
    first.other, second.other = second, first  # a cycle: reference counting never frees it
    alive = weakref.ref(first)
    heap.settle()
    assert gc.get_freeze_count() > 0
    del first, second
    gc.collect()
    assert alive() is not None  # frozen: the collector does not look at it
    heap.release()
    assert alive() is None
    assert gc.get_freeze_count() > 0  # what is still alive is frozen again


def test_release_without_settle_leaves_the_collector_alone() -> None:
    assert gc.get_freeze_count() == 0
    heap.release()
    assert gc.get_freeze_count() == 0


def test_after_settle_cycles_are_still_collected_without_being_asked() -> None:
    heap.settle()
    assert gc.get_threshold()[0] == heap.YOUNG_THRESHOLD
    first, second = _Node(), _Node()
    first.other, second.other = second, first
    alive = weakref.ref(first)
    del first, second
    kept = [[] for _ in range(heap.YOUNG_THRESHOLD // 2)]
    assert alive() is not None  # not yet: fewer allocations than the threshold
    kept += [[] for _ in range(heap.YOUNG_THRESHOLD)]
    assert alive() is None  # the collector ran by itself
