"""What a verbose server logs of its backends' settings and batchers, in Triton's words (the
lines Triton's L0_backend_config reads): the backend configuration a backend is initialized
with, the default-max-batch-size added or found for each model load, and each dynamic
batcher's start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.models import identity_config, write_model
from support.server_process import ServerProcess


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("cmdline_repo")
    write_model(repo, "batched", identity_config("batched", extra="dynamic_batching { }"))
    write_model(repo, "plain", identity_config("plain"))
    return repo


def _configuration(messages: list[str]) -> dict:
    """The JSON of the one "backend configuration:" record (the identity backend's), one
    line in the log as Triton writes it (the message a JSON string)."""
    records = [m for m in messages if m.startswith("backend configuration:\n")]
    assert len(records) == 1, messages
    return json.loads(records[0].split("\n", 1)[1])


def test_defaults_added_for_each_load_and_the_servers_settings(repo: Path) -> None:
    with ServerProcess([repo], "--log-verbose=1", "--disable-auto-complete-config",
                       "--backend-config=identity,min-compute-capability=XX",
                       "--backend-config=identity,a=0") as server:
        server.wait_live(endpoint="ready")
    log = server.log_messages()  # complete once the server has exited
    configuration = _configuration(log)
    # Triton's order: the settings by name, then the default that none of them set.
    assert list(configuration["cmdline"].items()) == [
        ("a", "0"), ("auto-complete-config", "false"),
        ("backend-directory", "/opt/tritonserver/backends"), ("min-compute-capability", "XX"),
        ("default-max-batch-size", "4")]
    assert log.count("Adding default backend config setting: default-max-batch-size,4") == 2
    assert not any("Found overwritten default setting" in m for m in log)
    assert "Starting dynamic-batcher thread for batched at default nice..." in log
    assert not any("dynamic-batcher thread for plain" in m for m in log)


def test_a_set_default_is_found_and_a_global_server_setting_replaced(repo: Path,
                                                                    tmp_path: Path) -> None:
    with ServerProcess([repo], "--log-verbose=1", f"--backend-directory={tmp_path}",
                       "--backend-config=default-max-batch-size=6",
                       "--backend-config=min-compute-capability=1.5") as server:
        server.wait_live(endpoint="ready")
    log = server.log_messages()  # complete once the server has exited
    assert _configuration(log)["cmdline"] == {
        "auto-complete-config": "true", "backend-directory": str(tmp_path),
        "default-max-batch-size": "6", "min-compute-capability": "6.000000"}
    assert log.count("Found overwritten default setting: default-max-batch-size,6") == 2
    assert not any("Adding default backend config setting" in m for m in log)


def test_a_server_that_is_not_verbose_logs_none_of_it(repo: Path) -> None:
    with ServerProcess([repo]) as server:
        server.wait_live(endpoint="ready")
    log = server.log()
    for text in ("backend configuration:", "default backend config setting",
                 "dynamic-batcher thread"):
        assert text not in log
