"""`--model-control-mode poll` (with `--repository-poll-secs`) and the start-up side of the
other modes: POLL picks up new, changed and removed models and versions while serving."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.models import identity_config, write_model
from support.server_process import ServerProcess


def wait_for(condition: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def index(client: httpclient.InferenceServerClient, name: str) -> list[dict]:
    return [e for e in client.get_model_repository_index() if e["name"] == name]


def infer(client: httpclient.InferenceServerClient, model: str) -> list:
    tensor = httpclient.InferInput("INPUT0", [1, 1], "FP32")
    tensor.set_data_from_numpy(np.array([[3]], np.float32))
    return client.infer(model, [tensor]).as_numpy("OUTPUT0").tolist()


@pytest.fixture()
def polled(tmp_path: Path):
    write_model(tmp_path, "a", identity_config("a"))
    with ServerProcess([tmp_path], "--model-control-mode=poll",
                       "--repository-poll-secs=0.3") as server:
        yield tmp_path, server, httpclient.InferenceServerClient(server.http_url)


def test_poll_loads_a_new_model(polled) -> None:
    repo, _, client = polled
    assert client.is_model_ready("a")
    write_model(repo, "b", identity_config("b"))
    assert wait_for(lambda: client.is_model_ready("b"))
    assert infer(client, "b") == [[3.0]]


def test_poll_reloads_a_changed_config(polled) -> None:
    repo, _, client = polled
    (repo / "a" / "config.pbtxt").write_text(identity_config("a", max_batch_size=4))
    assert wait_for(lambda: client.get_model_config("a")["max_batch_size"] == 4)
    assert infer(client, "a") == [[3.0]]


def test_poll_picks_up_a_new_version_and_drops_the_old(polled) -> None:
    repo, _, client = polled
    (repo / "a" / "2").mkdir()
    assert wait_for(lambda: client.is_model_ready("a", "2"))
    assert wait_for(lambda: not client.is_model_ready("a", "1"))
    assert wait_for(lambda: {"name": "a", "version": "1", "state": "UNAVAILABLE",
                             "reason": "unloaded"} in index(client, "a"))


def test_poll_unloads_a_removed_model(polled) -> None:
    repo, _, client = polled
    write_model(repo, "gone", identity_config("gone"))
    assert wait_for(lambda: client.is_model_ready("gone"))
    shutil.rmtree(repo / "gone")
    assert wait_for(lambda: not client.is_model_ready("gone"))
    assert wait_for(lambda: index(client, "gone") == [])
    assert client.is_model_ready("a")
    # Unloaded, not forgotten, as in Triton (L0_lifecycle test_dynamic_model_load_unload).
    with pytest.raises(InferenceServerException) as info:
        infer(client, "gone")
    assert info.value.message() == "Request for unknown model: 'gone' has no available versions"


def test_poll_reports_a_broken_model_and_keeps_serving(polled) -> None:
    repo, server, client = polled
    write_model(repo, "bad", 'name: "bad"\nbackend: "no_such_backend"\n')
    assert wait_for(lambda: [e.get("state") for e in index(client, "bad")] == ["UNAVAILABLE"])
    assert "no_such_backend" in index(client, "bad")[0]["reason"]
    assert infer(client, "a") == [[3.0]]
    # A failed reload of a serving model leaves the old version serving.
    (repo / "a" / "config.pbtxt").write_text(
        identity_config("a").replace('backend: "identity"', 'backend: "no_such_backend"'))
    # The reload was tried and failed (not merely not tried yet) ...
    assert wait_for(lambda: "load failed for model 'a'" in server.log())
    # ... and the old version goes on serving.
    assert client.is_model_ready("a")
    assert infer(client, "a") == [[3.0]]
    assert client.get_model_config("a")["backend"] == "identity"


def test_poll_mode_refuses_load_and_unload_requests(polled) -> None:
    _, server, client = polled
    with pytest.raises(InferenceServerException) as info:
        client.load_model("a")
    assert info.value.status() == "503"
    assert info.value.message() == (
        "explicit model load / unload is not allowed if polling is enabled")
    with pytest.raises(InferenceServerException) as info:
        grpcclient.InferenceServerClient(server.grpc_url).unload_model("a")
    assert info.value.status() == "StatusCode.UNAVAILABLE"
    assert client.is_model_ready("a")


def test_explicit_mode_with_no_startup_model_loads_nothing(tmp_path: Path) -> None:
    write_model(tmp_path, "a", identity_config("a"))
    with ServerProcess([tmp_path], "--model-control-mode=explicit") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.get_model_repository_index() == [{"name": "a"}]
        assert client.is_server_ready()


def test_server_stays_ready_after_an_unload_but_not_after_a_failed_load(tmp_path: Path) -> None:
    # As Triton 2.51 with strict readiness: unloaded versions do not count, failed ones do.
    write_model(tmp_path, "a", identity_config("a"))
    write_model(tmp_path, "bad", 'name: "bad"\nbackend: "no_such_backend"\n')
    with ServerProcess([tmp_path], "--model-control-mode=explicit", "--load-model=a") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.is_server_ready()
        client.unload_model("a")
        assert client.is_server_ready()
        with pytest.raises(InferenceServerException):
            client.load_model("bad")
        assert not client.is_server_ready()
        client.unload_model("bad")
        assert not client.is_server_ready()


def test_poll_lets_a_removed_broken_model_go(polled) -> None:
    repo, _, client = polled
    write_model(repo, "broken", 'name: "broken"\nbackend: "no_such_backend"\n')
    assert wait_for(lambda: not client.is_server_ready())
    shutil.rmtree(repo / "broken")
    # Its failed version shows "unloaded" now: it no longer holds readiness back.
    assert wait_for(lambda: client.is_server_ready())
    assert index(client, "broken") == []
    with pytest.raises(InferenceServerException) as info:
        infer(client, "broken")
    assert info.value.message() == (
        "Request for unknown model: 'broken' has no available versions")


def test_explicit_reload_unloads_versions_removed_from_the_repository(tmp_path: Path) -> None:
    write_model(tmp_path, "v", identity_config("v", extra="version_policy: { all: {} }"),
                versions=(1, 2))
    with ServerProcess([tmp_path], "--model-control-mode=explicit", "--load-model=v") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.is_model_ready("v", "2")
        shutil.rmtree(tmp_path / "v" / "2")
        client.load_model("v")
        assert client.is_model_ready("v", "1")
        assert not client.is_model_ready("v", "2")
        assert wait_for(lambda: {"name": "v", "version": "2", "state": "UNAVAILABLE",
                                 "reason": "unloaded"} in index(client, "v"))


CONSTANT_PY = """
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "OUT", np.array([{value}], np.int32))]) for r in requests]
"""

CONSTANT_CONFIG = """
name: "constant"
backend: "python"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
"""


def test_poll_reloads_a_model_whose_files_changed(tmp_path: Path) -> None:
    write_model(tmp_path, "constant", CONSTANT_CONFIG,
                files={"1/model.py": CONSTANT_PY.format(value=1)})
    with ServerProcess([tmp_path], "--model-control-mode=poll",
                       "--repository-poll-secs=0.3") as server:
        client = httpclient.InferenceServerClient(server.http_url)

        def answer() -> int:
            tensor = httpclient.InferInput("IN", [1], "INT32")
            tensor.set_data_from_numpy(np.array([0], np.int32))
            return int(client.infer("constant", [tensor]).as_numpy("OUT")[0])

        assert answer() == 1
        (tmp_path / "constant" / "1" / "model.py").write_text(CONSTANT_PY.format(value=22))
        assert wait_for(lambda: answer() == 22)


def test_poll_secs_zero_polls_only_at_start_up(tmp_path: Path) -> None:
    # tritonserver takes 0: the start-up poll loads the repository, none follows, and load
    # requests are refused as in any POLL mode (L0_lifecycle's control endpoint section).
    write_model(tmp_path, "a", identity_config("a"))
    with ServerProcess([tmp_path], "--model-control-mode=poll",
                       "--repository-poll-secs=0") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.is_server_ready() and client.is_model_ready("a")
        with pytest.raises(InferenceServerException) as info:
            client.load_model("a")
        assert info.value.status() == "503"
        assert info.value.message() == (
            "explicit model load / unload is not allowed if polling is enabled")


def test_a_repository_given_twice_counts_once(tmp_path: Path) -> None:
    write_model(tmp_path, "a", identity_config("a"))
    with ServerProcess([tmp_path, tmp_path]) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.is_server_ready() and client.is_model_ready("a")
        assert client.get_model_repository_index() == [
            {"name": "a", "version": "1", "state": "READY"}]


def test_a_startup_model_missing_from_the_repositories_is_logged(tmp_path: Path) -> None:
    write_model(tmp_path, "a", identity_config("a"))
    with ServerProcess([tmp_path], "--model-control-mode=explicit", "--load-model=a",
                       "--load-model=does-not-exist", "--exit-on-error=false") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.is_model_ready("a") and not client.is_model_ready("does-not-exist")
        assert "failed to poll model 'does-not-exist': model not found in any model " \
            "repository." in server.log_messages()


def test_a_model_whose_configuration_cannot_be_read_is_left_out_and_logged(tmp_path: Path):
    # Triton's Poll: the model is not added (L0_lifecycle test_parse_error_no_model_config).
    write_model(tmp_path, "a", identity_config("a"))
    write_model(tmp_path, "unread", None)
    (tmp_path / "unread" / "config.pbtxt").write_text("name: [")
    with ServerProcess([tmp_path], "--model-control-mode=poll", "--repository-poll-secs=0",
                       "--exit-on-error=false") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.is_server_ready()
        with pytest.raises(InferenceServerException) as info:
            infer(client, "unread")
        assert info.value.message() == "Request for unknown model: 'unread' is not found"
        assert {"name": "unread"} in client.get_model_repository_index()
        assert [m for m in server.log_messages()
                if m.startswith("Poll failed for model directory 'unread': ")]
