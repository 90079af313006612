"""heap.settle freezes what the server holds at start; heap.release lets the collector free the
cycles among frozen objects the server has let go of (an unloaded model), so freezing leaks
nothing, in one collection for many releases in a row, after which the freed memory goes back
to the system (malloc_trim); and once settled, young objects are collected less often, but
still collected.

Each check runs in a fresh interpreter (support/heap_checks.py says why)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from support import ROOT


@pytest.mark.parametrize("check", [
    "release_collects_cycles_that_were_frozen",
    "releases_in_a_row_cost_one_full_collection",
    "release_without_settle_leaves_the_collector_alone",
    "release_gives_the_freed_memory_back_after_collecting",
    "after_settle_cycles_are_still_collected_without_being_asked",
])
def test_the_collector(check: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    result = subprocess.run([sys.executable, str(ROOT / "tests" / "support" / "heap_checks.py"),
                             check], env=env, capture_output=True, text=True, timeout=120,
                            check=False)
    assert result.returncode == 0, result.stderr
