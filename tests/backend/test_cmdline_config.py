"""The settings a backend is initialized with, resolved as Triton resolves them: the server's
global settings after the user's global ones, a backend's own over both, in setting order, and
`default-max-batch-size` appended where none names it (with Triton's verbose lines)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tritium.backend.cmdline_config import resolve, with_server_settings


def _server(config: dict[str, dict[str, str]], auto_complete: bool = True):
    return with_server_settings(config, auto_complete=auto_complete,
                                min_compute_capability=6.0,
                                backend_directory=Path("/opt/tritonserver/backends"))


def test_the_server_settings_in_tritons_format() -> None:
    assert _server({}, auto_complete=False) == {"": {
        "auto-complete-config": "false", "min-compute-capability": "6.000000",
        "backend-directory": "/opt/tritonserver/backends"}}


def test_settings_in_order_then_the_default_appended(caplog: pytest.LogCaptureFixture) -> None:
    config = _server({"onnxruntime": {"z": "0", "a": "0"}, "": {"shared": "1"}})
    with caplog.at_level(logging.DEBUG, "tritium.backend"):
        resolved = resolve(config, "onnxruntime")
    assert list(resolved.items()) == [
        ("a", "0"), ("auto-complete-config", "true"), ("backend-directory",
                                                       "/opt/tritonserver/backends"),
        ("min-compute-capability", "6.000000"), ("shared", "1"), ("z", "0"),
        ("default-max-batch-size", "4")]
    assert caplog.messages == ["Adding default backend config setting: default-max-batch-size,4"]


def test_the_servers_settings_replace_a_global_one_a_backends_own_replaces_them() -> None:
    config = _server({"": {"min-compute-capability": "1.5"},
                      "onnxruntime": {"min-compute-capability": "XX"}})
    assert resolve(config, "onnxruntime")["min-compute-capability"] == "XX"
    assert resolve(config, "python")["min-compute-capability"] == "6.000000"


@pytest.mark.parametrize(("config", "value"), [
    ({"": {"default-max-batch-size": "6"}}, "6"),
    ({"": {"default-max-batch-size": "7"}, "onnxruntime": {"default-max-batch-size": "8"}}, "8"),
])
def test_a_set_default_is_kept_and_logged(caplog: pytest.LogCaptureFixture,
                                          config: dict[str, dict[str, str]], value: str) -> None:
    with caplog.at_level(logging.DEBUG, "tritium.backend"):
        resolved = resolve(_server(config), "onnxruntime")
    assert resolved["default-max-batch-size"] == value
    assert list(resolved)[-1] != "default-max-batch-size"  # in order with the others
    assert caplog.messages == [f"Found overwritten default setting: default-max-batch-size,{value}"]
