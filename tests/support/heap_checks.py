"""The collector checks of tests/test_heap.py, each run in a fresh interpreter
(`python heap_checks.py NAME`): a pytest worker's heap holds whatever its other tests imported
(torch, transformers), and a full collection over it took a minute; a fresh process also starts
with nothing frozen and the default thresholds."""

from __future__ import annotations

import gc
import sys
import weakref

from tritium import heap


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def release_collects_cycles_that_were_frozen() -> None:
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


def release_without_settle_leaves_the_collector_alone() -> None:
    assert gc.get_freeze_count() == 0
    heap.release()
    assert gc.get_freeze_count() == 0


def after_settle_cycles_are_still_collected_without_being_asked() -> None:
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


if __name__ == "__main__":
    globals()[sys.argv[1]]()
