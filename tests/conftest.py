"""Every test imports its helpers as `support.X` (tests/support/): tests/ and src/ go on sys.path
here, before any test module is imported."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
# The helper modules' asserts explain their failures like the tests' own.
pytest.register_assert_rewrite("support")

from support.fixtures import http_client, server, standard_repo  # noqa: E402, F401
