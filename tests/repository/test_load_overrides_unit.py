"""load_overrides in-process: which model names and override paths are refused, and that an
accepted override lands only inside its private directory."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from tritium.errors import Code, TritonError
from tritium.repository.load_overrides import OverrideDirectory, check_model_name, inside


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../a", "/abs", "a\\b", "a\0b", " a"])
def test_names_that_are_not_one_directory_are_refused(name: str) -> None:
    with pytest.raises(TritonError) as info:
        check_model_name(name)
    assert info.value.code is Code.INVALID_ARG


@pytest.mark.parametrize("name", ["m", "my.model", "m-1_2", "..m"])
def test_plain_names_are_accepted(name: str) -> None:
    check_model_name(name)


@pytest.mark.parametrize("key", ["file:", "file:/", "file:/../x", "file:../x", "file:1/../../x",
                                 "file:./1/x", "file:1\\..\\x", "file:1/\0x"])
def test_paths_that_could_leave_are_refused_before_anything_is_written(
        key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(TritonError) as info:
        OverrideDirectory("m", {key: b"x"})
    assert info.value.code is Code.INVALID_ARG
    assert os.listdir(tmp_path) == []


def test_accepted_files_land_inside_and_go_away(tmp_path: Path) -> None:
    # A leading / is inside the override directory too, as Triton joins the path to it.
    override = OverrideDirectory("m", {"file:1/model.py": b"code", "file:/1/sub/w.bin": b"\1",
                                       "file:/etc/x": b"\2"})
    assert override.path.name == "m"
    assert (override.path / "1" / "model.py").read_bytes() == b"code"
    assert (override.path / "1" / "sub" / "w.bin").read_bytes() == b"\1"
    assert (override.path / "etc" / "x").read_bytes() == b"\2"
    assert inside(override.path / "1" / "sub" / "w.bin", override.root)
    override.remove()
    assert not override.root.exists()


def test_inside_follows_symlinks(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "out").mkdir()
    os.symlink(tmp_path / "out", tmp_path / "root" / "link")
    assert inside(tmp_path / "root" / "real", tmp_path / "root")
    assert not inside(tmp_path / "root" / "link", tmp_path / "root")
    assert not inside(tmp_path / "root" / ".." / "out", tmp_path / "root")
