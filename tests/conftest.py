"""Every test imports its helpers as `support.X` (tests/support/): tests/ and src/ go on sys.path
here, before any test module is imported.

`make test` runs the suite on pytest-xdist workers with `--dist loadgroup`: each test module is
one group (its module-scoped server is started once, on one worker), except the modules whose
tests each start what they need (the docs pages, `tritium infer`), whose tests are spread one by
one; and the Ray tests are one group together (they share one simulated cluster per worker,
and two clusters would contend for the machine; `make test` runs them after the others, on
their own, as a cluster starting beside another worker's servers could time out). The
slowest modules are collected first so that no worker is left with one of them at the end."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
# pytest imported `tritium` already, for the plugin its entry point names, from wherever the venv's
# editable install points: in a git worktree, another checkout. Its submodules come from this one.
_PACKAGE = str(Path(__file__).resolve().parent.parent / "src" / "tritium")
if "tritium" in sys.modules and list(sys.modules["tritium"].__path__) != [_PACKAGE]:
    sys.modules["tritium"].__path__[:] = [_PACKAGE]
# The helper modules' asserts explain their failures like the tests' own.
pytest.register_assert_rewrite("support")

from support.fixtures import (  # noqa: E402, F401
    grpc_client_of,
    http_client,
    server,
    standard_repo,
)

# Modules that take a minute or more: started first, so they overlap the rest.
_SLOWEST_FIRST = (
    "test_docs.py",
    "ray_placement/",
    "test_infer_command.py",
    "repository/test_control_modes.py",
    "repository/test_lifecycle.py",
    "inprocess/test_inprocess_pytest_plugin.py",
    "builtin_backends/llm/",
)

# Modules with no shared fixture: their tests may run on any worker.
_EACH_ON_ITS_OWN = ("tests/test_docs.py", "tests/test_infer_command.py")


def _rank(item: pytest.Item) -> int:
    path = item.nodeid.split("::", 1)[0]
    return next((i for i, part in enumerate(_SLOWEST_FIRST) if part in path),
                len(_SLOWEST_FIRST))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=_rank)  # stable: each module keeps its own order
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        if not module.endswith(_EACH_ON_ITS_OWN):
            group = "ray" if "ray_placement/" in module else module
            item.add_marker(pytest.mark.xdist_group(group))
