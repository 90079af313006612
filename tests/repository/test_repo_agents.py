"""Repository agents (`model_repository_agents`): a compiled TRITONREPOAGENT library, built
here against Tritium's API header as Triton's agents are, sees a model's files before it loads,
may refuse the load or move it to other files, and hears each step of the model's life.

The test agent (tests/support/native_backends/audit_agent.cc) writes every action it hears to
a file named by its `log` parameter; the server is a real process driven by tritonclient.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support import ROOT
from support.native_fixtures import compile_backends
from support.server_process import ServerProcess

IO = ('backend: "identity"\nmax_batch_size: 0\n'
      'input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]\n'
      'output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]\n')


def _agents(*agents: tuple[str, dict[str, str]]) -> str:
    entries = []
    for name, parameters in agents:
        pairs = ", ".join(f'{{ key: "{k}" value: "{v}" }}' for k, v in parameters.items())
        entries.append(f'{{ name: "{name}" parameters [ {pairs} ] }}')
    return f"model_repository_agents {{ agents [ {', '.join(entries)} ] }}\n"


def _model(repo: Path, name: str, config: str, version_folder: str = "1") -> Path:
    folder = repo / name
    (folder / version_folder).mkdir(parents=True)
    (folder / version_folder / "weights.bin").write_bytes(b"\x01\x02")
    (folder / "config.pbtxt").write_text(f'name: "{name}"\n{IO}{config}')
    return folder


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _actions(path: Path) -> list[str]:
    return [line for line in _lines(path) if line.isupper()]


@pytest.fixture(scope="module")
def agents_dir(tmp_path_factory) -> Path:
    return compile_backends(tmp_path_factory.mktemp("repoagents"), {"audit": "audit_agent"},
                            filename="libtritonrepoagent_{name}.so")


@pytest.fixture()
def setup(tmp_path, agents_dir):
    repo = tmp_path / "models"
    logs = tmp_path / "logs"
    logs.mkdir()
    agent_life = logs / "agent.log"
    _model(repo, "guarded", _agents(("audit", {"log": str(logs / "guarded.log"),
                                               "require": "1/weights.bin"})))
    _model(repo, "tampered", _agents(("audit", {"log": str(logs / "tampered.log"),
                                                "require": "1/signature.sig"})))
    _model(repo, "sealed", _agents(("audit", {"log": str(logs / "sealed.log"),
                                              "relocate": "true"})), version_folder="sealed")
    _model(repo, "chained", _agents(("audit", {"log": str(logs / "first.log"),
                                               "relocate": "true"}),
                                    ("audit", {"log": str(logs / "second.log"),
                                               "require": "1/weights.bin"})),
           version_folder="sealed")
    _model(repo, "unknown_agent", _agents(("nope", {})))
    server = ServerProcess([repo], "--model-control-mode=explicit",
                           f"--repoagent-directory={agents_dir}", "--log-verbose=1",
                           env={"AUDIT_AGENT_LOG": str(agent_life)})
    server.start()
    try:
        yield server, logs
    finally:
        server.stop()


def _infer(server: ServerProcess, model: str) -> np.ndarray:
    client = httpclient.InferenceServerClient(server.http_url)
    data = np.arange(4, dtype=np.int32)
    inp = httpclient.InferInput("INPUT0", [4], "INT32")
    inp.set_data_from_numpy(data)
    result = client.infer(model, [inp])
    return result.as_numpy("OUTPUT0")


def test_agent_hears_the_model_life(setup):
    server, logs = setup
    client = httpclient.InferenceServerClient(server.http_url)
    client.load_model("guarded")
    assert (_infer(server, "guarded") == np.arange(4)).all()
    lines = _lines(logs / "guarded.log")
    # Two parameters, the configuration as written (with its agents), the model's own folder.
    assert f"params=2 agents_in_config=1 location={server.repositories[0]}/guarded" in lines
    assert _actions(logs / "guarded.log") == ["LOAD", "LOAD_COMPLETE"]
    client.unload_model("guarded")
    assert _actions(logs / "guarded.log") == ["LOAD", "LOAD_COMPLETE", "UNLOAD",
                                              "UNLOAD_COMPLETE"]
    # The agent library was initialized once and finalized with its last model.
    assert _lines(logs / "agent.log") == ["INITIALIZE", "FINALIZE"]


def test_reload_moves_the_model_to_a_new_agent_model(setup):
    server, logs = setup
    client = httpclient.InferenceServerClient(server.http_url)
    client.load_model("guarded")
    client.load_model("guarded")  # reload: the new load's agents, then the old ones let go
    assert (_infer(server, "guarded") == np.arange(4)).all()
    assert _actions(logs / "guarded.log") == ["LOAD", "LOAD_COMPLETE", "LOAD", "LOAD_COMPLETE",
                                              "UNLOAD", "UNLOAD_COMPLETE"]


def test_agent_refuses_the_load(setup):
    server, logs = setup
    client = httpclient.InferenceServerClient(server.http_url)
    with pytest.raises(InferenceServerException) as caught:
        client.load_model("tampered")
    assert "audit agent: missing file '1/signature.sig'" in caught.value.message()
    server.wait_log("Poll failed for model directory 'tampered': audit agent: missing file "
                        "'1/signature.sig' in ")
    assert _actions(logs / "tampered.log") == ["LOAD", "LOAD_FAIL"]
    assert not client.is_model_ready("tampered")
    client.load_model("guarded")  # the server serves on
    assert client.is_model_ready("guarded")


def test_agent_moves_the_load_to_its_copy(setup):
    server, logs = setup
    client = httpclient.InferenceServerClient(server.http_url)
    # The repository folder holds no version folder "1": only the agent's copy has one.
    client.load_model("sealed")
    assert (_infer(server, "sealed") == np.arange(4)).all()
    copy = Path(next(line for line in _lines(logs / "sealed.log")
                     if line.startswith("relocated "))[len("relocated "):])
    assert (copy / "1" / "weights.bin").exists()
    client.unload_model("sealed")
    assert _actions(logs / "sealed.log")[-2:] == ["UNLOAD", "UNLOAD_COMPLETE"]
    assert not copy.exists()  # released by the agent's ModelFinalize


def test_agents_chain_in_order(setup):
    server, logs = setup
    client = httpclient.InferenceServerClient(server.http_url)
    client.load_model("chained")
    copy = next(line for line in _lines(logs / "first.log") if line.startswith("relocated "))
    copy = copy[len("relocated "):]
    # The second agent sees the first one's copy, and the configuration found there.
    assert f"params=2 agents_in_config=1 location={copy}" in _lines(logs / "second.log")
    client.unload_model("chained")
    assert _actions(logs / "first.log") == ["LOAD", "LOAD_COMPLETE", "UNLOAD",
                                            "UNLOAD_COMPLETE"]
    assert _actions(logs / "second.log") == ["LOAD", "LOAD_COMPLETE", "UNLOAD",
                                             "UNLOAD_COMPLETE"]


def test_unknown_agent_is_named(setup, agents_dir):
    server, _ = setup
    client = httpclient.InferenceServerClient(server.http_url)
    with pytest.raises(InferenceServerException) as caught:
        client.load_model("unknown_agent")
    expected = (f"unable to find 'libtritonrepoagent_nope.so' for repo agent 'nope', "
                f"searched: {agents_dir}")
    assert expected in caught.value.message()
    assert client.is_server_live()


def test_agents_run_at_start_up(tmp_path, agents_dir):
    repo = tmp_path / "models"
    log = tmp_path / "guarded.log"
    _model(repo, "guarded", _agents(("audit", {"log": str(log), "require": "1/weights.bin"})))
    _model(repo, "tampered", _agents(("audit", {"log": str(tmp_path / "t.log"),
                                                "require": "1/signature.sig"})))
    server = ServerProcess([repo], f"--repoagent-directory={agents_dir}",
                           "--exit-on-error=false", "--strict-readiness=false")
    server.start()
    try:
        server.wait_log("Poll failed for model directory 'tampered': audit agent: missing "
                            "file '1/signature.sig'")
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.is_model_ready("guarded")
        assert not client.is_model_ready("tampered")
    finally:
        server.stop()
    # The exit unloads the model: its agent hears the end of its life.
    assert _actions(log) == ["LOAD", "LOAD_COMPLETE", "UNLOAD", "UNLOAD_COMPLETE"]


IN_PROCESS = """
import sys, tritonserver
server = tritonserver.Server(model_repository=sys.argv[1], repo_agent_directory=sys.argv[2],
                             model_control_mode=tritonserver.ModelControlMode.EXPLICIT)
server.start(wait_until_ready=True)
server.load("guarded")
print("ready", server.model("guarded").ready())
server.stop()
"""


def test_the_in_process_api_takes_the_agent_directory(tmp_path, agents_dir):
    repo = tmp_path / "models"
    log = tmp_path / "guarded.log"
    _model(repo, "guarded", _agents(("audit", {"log": str(log), "require": "1/weights.bin"})))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    result = subprocess.run([sys.executable, "-c", IN_PROCESS, str(repo), str(agents_dir)],
                            capture_output=True, text=True, timeout=300, env=env, check=False)
    assert result.returncode == 0, result.stderr
    assert "ready True" in result.stdout
    assert _actions(log) == ["LOAD", "LOAD_COMPLETE", "UNLOAD", "UNLOAD_COMPLETE"]
