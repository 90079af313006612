"""heap.settle freezes what the server holds at start; heap.release lets the collector free the
cycles among frozen objects the server has let go of (an unloaded model), so freezing leaks
nothing."""

from __future__ import annotations

import gc
import weakref

from tritium import heap


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_release_collects_cycles_that_were_frozen() -> None:
    try:
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
    finally:
        gc.unfreeze()


def test_release_without_settle_leaves_the_collector_alone() -> None:
    assert gc.get_freeze_count() == 0
    heap.release()
    assert gc.get_freeze_count() == 0
