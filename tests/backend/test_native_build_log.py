"""The first build of a native library says so, and how long it took; a cached one is silent."""

from __future__ import annotations

import logging
import shutil

import pytest

from tritium.backend.native import build


@pytest.mark.skipif(not any(shutil.which(c) for c in ("c++", "g++", "clang++")),
                    reason="needs a C++ compiler")
def test_first_build_is_logged_with_its_duration(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("TRITIUM_NATIVE_CACHE", str(tmp_path))
    caplog.set_level(logging.INFO, logger="tritium.backend.native")
    # The alias library: a real compile of the smallest of Tritium's native libraries.
    path = build.alias_path("libtritium-build-log.so")
    lines = [r.getMessage() for r in caplog.records if r.name == "tritium.backend.native"]
    assert len(lines) == 2, lines
    assert lines[0].startswith("building libtritium-build-log.so with ")
    assert f"(once: cached in {path.parent})" in lines[0]
    assert lines[1].startswith("built libtritium-build-log.so in ") and lines[1].endswith(" s")
    caplog.clear()
    assert build.alias_path("libtritium-build-log.so") == path
    assert not [r for r in caplog.records if r.name == "tritium.backend.native"]
