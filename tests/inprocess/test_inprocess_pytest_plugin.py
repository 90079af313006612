"""The pytest plugin, exercised by pytest runs inside the tests (pytester, in a subprocess).

The plugin is loaded with `-p tritium.pytest_plugin`, as the `pytest11` entry point loads it
once Tritium is installed.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import tomllib

from support import ROOT
from support.inprocess_models import inprocess_repository

pytest_plugins = ["pytester"]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return inprocess_repository(tmp_path_factory.mktemp("plugin_repo"))


@pytest.fixture
def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))

    def run_pytest(*args: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess(
            "-p", "tritium.pytest_plugin", "-p", "no:cacheprovider", *args, timeout=240
        )

    return run_pytest


def test_a_model_test_passes_with_the_repository_option(pytester, run, repo: Path):
    pytester.makepyfile(test_model="""
        import numpy as np

        def test_add_sub(tritium_server):
            server = tritium_server(models=["add_sub"])
            one = np.ones(4, np.float32)
            assert server.infer("add_sub", INPUT0=one, INPUT1=one)["OUTPUT0"].tolist() == [2] * 4

        def test_stream_and_frontends(tritium_server):
            server = tritium_server(models=["repeat"], frontends=True)
            outs = server.stream("repeat", IN=np.arange(3, dtype=np.int32),
                                 DELAY=np.zeros(3, np.uint32), WAIT=np.zeros(1, np.uint32))
            assert [o["OUT"].tolist() for o in outs] == [[0], [1], [2]]
            assert server.http_client.is_model_ready("repeat")
            assert server.grpc_client.is_server_live()
            assert server.http_url.startswith("127.0.0.1:")
    """)
    result = run(f"--tritium-repository={repo}")
    result.assert_outcomes(passed=2)


def test_infer_adds_the_batch_dimension_as_tritium_infer_does(pytester, run):
    """One rule for both (tritium.batch_dimension): a value one rank short of a batching
    model's input gets a batch of one; a full-rank value passes as is."""
    pytester.makepyfile(test_model="""
        import numpy as np

        def test_identity(tritium_server):
            server = tritium_server(models=["identity_fp32"])
            out = server.infer("identity_fp32", INPUT0=np.array([1, 2, 3], np.float32))
            assert out["OUTPUT0"].tolist() == [[1, 2, 3]]
            two = np.arange(6, dtype=np.float32).reshape(2, 3)
            assert server.infer("identity_fp32", INPUT0=two)["OUTPUT0"].tolist() == two.tolist()
    """)
    result = run(f"--tritium-repository={ROOT / 'examples' / 'model_repository'}")
    result.assert_outcomes(passed=1)


def test_a_model_that_fails_to_load_fails_the_test_with_its_error_and_log(pytester, run,
                                                                          repo: Path):
    pytester.makepyfile(test_broken="""
        def test_broken(tritium_server):
            tritium_server(models=["broken"])
    """)
    result = run(f"--tritium-repository={repo}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*tritium_server: model 'broken' version 1 failed to load: *cannot load weights.bin*",
        "*the weights file is missing*",
    ])


def test_without_a_repository_the_fixture_says_so(pytester, run):
    pytester.makepyfile(test_none="""
        def test_none(tritium_server):
            tritium_server()
    """)
    result = run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*give a repository or --tritium-repository*"])


def test_teardown_fails_on_a_leaked_child_process(pytester, run, repo: Path, tmp_path: Path):
    pid_file = tmp_path / "pid"
    pytester.makepyfile(test_leak=f"""
        import subprocess

        def test_leak(tritium_server):
            tritium_server(models=["add_sub"])
            child = subprocess.Popen(["sleep", "60"])
            open({str(pid_file)!r}, "w").write(str(child.pid))
    """)
    try:
        result = run(f"--tritium-repository={repo}")
    finally:
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*child processes still running after the server stopped*"])


def test_the_pyproject_entry_point_loads_the_plugin(pytester, monkeypatch, repo: Path,
                                                   tmp_path: Path):
    """Installed, pytest finds the plugin through pyproject's pytest11 entry point (here a
    dist-info carrying exactly that entry point); `-p tritium.pytest_plugin` on top is harmless."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    entries = project["entry-points"]["pytest11"]
    dist_info = tmp_path / "site" / "tritium_probe-0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: tritium-probe\nVersion: 0\n")
    (dist_info / "entry_points.txt").write_text(
        "[pytest11]\n" + "".join(f"{name} = {value}\n" for name, value in entries.items()))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT / "src"), str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")]))
    pytester.makepyfile(test_model="""
        def test_fixture_is_there(tritium_server):
            assert tritium_server(models=["identity_fp32"]).server.ready()
    """)
    for extra in ([], ["-p", "tritium.pytest_plugin"]):
        result = pytester.runpytest_subprocess(*extra, "-p", "no:cacheprovider",
                                               f"--tritium-repository={repo}", timeout=240)
        result.assert_outcomes(passed=1)


def test_the_example_model_test(run):
    result = run(str(ROOT / "examples" / "testing"),
                 f"--tritium-repository={ROOT / 'examples' / 'model_repository'}")
    result.assert_outcomes(passed=1)
