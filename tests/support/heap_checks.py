"""The collector checks of tests/test_heap.py, each run in a fresh interpreter
(`python heap_checks.py NAME`): a pytest worker's heap holds whatever its other tests imported
(torch, transformers), and a full collection over it took a minute; a fresh process also starts
with the default thresholds and with only the interpreter's own objects frozen (none on 3.11 and
3.13; CPython 3.12 starts with a few hundred in the permanent generation, 375 on 3.12.1)."""

from __future__ import annotations

import gc
import platform
import sys
import time
import weakref

from tritium import heap

# What this interpreter froze before Tritium did anything (STARTUP_FROZEN < the count after a
# settle; the same count after a release without one).
STARTUP_FROZEN = gc.get_freeze_count()


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def release_collects_cycles_that_were_frozen() -> None:
    heap.QUIET_S = 0.5  # the server's pause (seconds) shortened for the check
    first, second = _Node(), _Node()
    first.other, second.other = second, first  # a cycle: reference counting never frees it
    alive = weakref.ref(first)
    heap.settle()
    assert gc.get_freeze_count() > STARTUP_FROZEN
    del first, second
    gc.collect()
    assert alive() is not None  # frozen: the collector does not look at it
    heap.release()
    # Collected once releases have paused for heap.QUIET_S, and what is still alive is frozen
    # again (the weak reference is cleared during the collection, before the freeze).
    _wait_for(lambda: alive() is None and gc.get_freeze_count() > STARTUP_FROZEN)


def releases_in_a_row_cost_one_full_collection() -> None:
    """A storm of unloads: each full collection holds the GIL for its whole walk."""
    heap.QUIET_S = 0.5
    full: list[int] = []
    gc.callbacks.append(lambda phase, info: full.append(1)
                        if phase == "start" and info["generation"] == 2 else None)
    heap.settle()
    full.clear()
    for _ in range(50):
        heap.release()
        time.sleep(heap.QUIET_S / 20)
    assert full == []  # none while they keep coming
    _wait_for(lambda: full == [1])
    time.sleep(heap.QUIET_S * 2)
    assert full == [1]


def release_gives_the_freed_memory_back_after_collecting() -> None:
    """What the unloaded model freed goes back to the system (malloc_trim) once its cycles are
    collected, not before: trimming first would leave the cycles' memory behind."""
    if platform.libc_ver()[0] == "glibc":
        assert heap.give_back is not None
    heap.QUIET_S = 0.5
    events: list[str] = []
    gc.callbacks.append(lambda phase, info: events.append("collected")
                        if phase == "stop" and info["generation"] == 2 else None)
    heap.give_back = lambda pad: events.append(f"given back {pad}") or 1
    heap.settle()
    events.clear()
    heap.release()
    _wait_for(lambda: "given back 0" in events)
    assert events == ["collected", "given back 0"]


def _wait_for(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not within 30 s"
        time.sleep(0.05)


def release_without_settle_leaves_the_collector_alone() -> None:
    heap.release()
    assert gc.get_freeze_count() == STARTUP_FROZEN


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
