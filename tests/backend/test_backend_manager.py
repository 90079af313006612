"""BackendManager: where backends come from, loaded once, shared, finalized by the last user."""

from __future__ import annotations

import importlib.metadata
import textwrap
import types
from pathlib import Path

import pytest

from tritium.backend.manager import BackendManager
from tritium.errors import Code, TritonError

RECORDING_BACKEND = """
    CALLS = []

    def initialize(backend):
        CALLS.append(("initialize", backend.name, dict(backend.config)))

    def finalize(backend):
        CALLS.append(("finalize", backend.name))

    def get_backend_attribute(backend, attributes):
        attributes.add_preferred_instance_group("KIND_CPU", 3)
        attributes.set_parallel_model_instance_loading(True)

    def model_instance_execute(instance, requests):
        pass
"""


def write_backend(directory: Path, name: str, source: str = RECORDING_BACKEND) -> Path:
    folder = directory / name
    folder.mkdir(parents=True)
    (folder / "backend.py").write_text(textwrap.dedent(source))
    return folder


def test_backend_directory_is_searched_and_loaded_once(tmp_path: Path) -> None:
    folder = write_backend(tmp_path, "recorder")
    manager = BackendManager([tmp_path], {"recorder": {"alpha": "1"}, "": {"shared": "yes"}})

    first = manager.acquire("recorder")
    second = manager.acquire("recorder")

    assert first is second
    assert first.handle.directory == folder
    module_calls = first.library.initialize.__globals__["CALLS"]
    init_calls = [c for c in module_calls if c[0] == "initialize"]
    assert len(init_calls) == 1
    _, name, config = init_calls[0]
    assert name == "recorder"
    assert config["alpha"] == "1" and config["shared"] == "yes"
    assert config["default-max-batch-size"] == "4"
    assert [g.count for g in first.attributes.preferred_groups] == [3]
    assert first.attributes.parallel_instance_loading is True


def test_last_release_finalizes(tmp_path: Path) -> None:
    write_backend(tmp_path, "recorder")
    manager = BackendManager([tmp_path])
    loaded = manager.acquire("recorder")
    manager.acquire("recorder")
    calls = loaded.library.initialize.__globals__["CALLS"]

    manager.release(loaded)
    assert ("finalize", "recorder") not in calls
    assert manager.loaded_names() == ["recorder"]
    manager.release(loaded)
    assert ("finalize", "recorder") in calls
    assert manager.loaded_names() == []


def test_builtin_identity_backend_is_found() -> None:
    loaded = BackendManager().acquire("identity")
    assert loaded.handle.directory is None
    assert loaded.library.origin == "built-in tritium.builtin_backends.identity"


def test_entry_point_backend_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = types.SimpleNamespace(model_instance_execute=lambda instance, requests: None)

    class FakeEntryPoint:
        name = "plugged"
        value = "plugin_pkg:backend"

        def load(self) -> object:
            return plugin

    def entry_points(group: str) -> list:
        return [FakeEntryPoint()] if group == "tritium.backends" else []

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    loaded = BackendManager().acquire("plugged")
    assert loaded.library.origin == "entry point plugin_pkg:backend"


def test_directory_wins_over_builtin(tmp_path: Path) -> None:
    write_backend(tmp_path, "identity")
    loaded = BackendManager([tmp_path]).acquire("identity")
    assert loaded.handle.directory == tmp_path / "identity"


def test_unknown_backend_names_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(TritonError) as info:
        BackendManager([tmp_path]).acquire("nonexistent")
    assert info.value.code is Code.INVALID_ARG
    assert "unable to find backend library for backend 'nonexistent'" in str(info.value)
    assert str(tmp_path) in str(info.value)


def test_backend_without_execute_is_rejected(tmp_path: Path) -> None:
    write_backend(tmp_path, "noexec", "def initialize(backend):\n    pass\n")
    with pytest.raises(TritonError) as info:
        BackendManager([tmp_path]).acquire("noexec")
    assert "model_instance_execute" in str(info.value)
    assert "TRITONBACKEND_ModelInstanceExecute" in str(info.value)


def test_backend_that_fails_to_import_reports_the_file(tmp_path: Path) -> None:
    write_backend(tmp_path, "broken", "raise RuntimeError('boom')\n")
    with pytest.raises(TritonError) as info:
        BackendManager([tmp_path]).acquire("broken")
    assert "backend.py" in str(info.value) and "boom" in str(info.value)


def test_a_broken_native_library_is_refused(tmp_path: Path) -> None:
    # Native backends load through tritium.backend.native (tests/test_native_backends.py);
    # a file that is not a shared library is refused, naming it.
    (tmp_path / "native").mkdir()
    (tmp_path / "native" / "libtriton_native.so").write_bytes(b"\x7fELF")
    with pytest.raises(TritonError) as info:
        BackendManager([tmp_path]).acquire("native")
    assert info.value.code is Code.INVALID_ARG
    assert "libtriton_native.so" in info.value.message


@pytest.mark.parametrize("name", ["../escape", ".hidden", ""])
def test_invalid_backend_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(TritonError) as info:
        BackendManager([tmp_path]).acquire(name)
    assert info.value.code is Code.INVALID_ARG
