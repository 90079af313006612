"""Ensembles and their composing models across the life cycle: composing models load first, an
ensemble with a missing or failed composing model is refused with Triton's reason (and gets no
state, as in Triton 2.51), unloading a composing model unloads the ensembles that use it, and
`unload_dependents` unloads an ensemble's composing models with it.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc
from tritonclient.utils import InferenceServerException

from support.models import identity_config, write_model
from support.raw_http import post
from support.server_process import ServerProcess
from tritium.repository import ModelReadyState, ModelRepositoryManager, VersionStatus
from tritium.repository.dependency_graph import DependencyGraph, composing_models
from tritium.repository.scanner import RepositoryScanner


def ensemble_config(name: str, *steps: str) -> str:
    """An ensemble chaining identity models: IN -> step 1 -> ... -> OUT."""
    text = [f'name: "{name}"', 'platform: "ensemble"', "max_batch_size: 8",
            'input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1 ] } ]',
            'output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] } ]',
            "ensemble_scheduling { step ["]
    for index, model in enumerate(steps):
        source = "IN" if index == 0 else f"t{index}"
        target = "OUT" if index == len(steps) - 1 else f"t{index + 1}"
        text.append(("," if index else "") + f'{{ model_name: "{model}" model_version: -1 '
                    f'input_map {{ key: "INPUT0" value: "{source}" }} '
                    f'output_map {{ key: "OUTPUT0" value: "{target}" }} }}')
    text.append("] }")
    return "\n".join(text) + "\n"


def broken_config(name: str) -> str:
    return identity_config(name).replace('backend: "identity"', 'backend: "no_such_backend"')


def build(repo: Path) -> Path:
    for name in ("a", "b", "c", "d", "e"):
        write_model(repo, name, identity_config(name))
    write_model(repo, "broken", broken_config("broken"))
    write_model(repo, "ens_ab", ensemble_config("ens_ab", "a", "b"))
    write_model(repo, "ens_c", ensemble_config("ens_c", "c"))
    write_model(repo, "ens_d", ensemble_config("ens_d", "d"))
    write_model(repo, "ens_e", ensemble_config("ens_e", "e"))
    write_model(repo, "ens_missing", ensemble_config("ens_missing", "a", "nothere"))
    write_model(repo, "ens_broken", ensemble_config("ens_broken", "broken"))
    return repo


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo = build(tmp_path_factory.mktemp("deps"))
    with ServerProcess([repo], "--model-control-mode=explicit") as process:
        yield process


def index(server: ServerProcess, name: str) -> list[dict]:
    client = httpclient.InferenceServerClient(server.http_url)
    return [e for e in client.get_model_repository_index() if e["name"] == name]



def test_loading_an_ensemble_loads_its_composing_models_first(server: ServerProcess) -> None:
    client = httpclient.InferenceServerClient(server.http_url)
    assert not client.is_model_ready("a") and not client.is_model_ready("b")
    client.load_model("ens_ab")
    assert client.is_model_ready("a")
    assert client.is_model_ready("b")
    assert client.is_model_ready("ens_ab")


def test_ensemble_with_a_missing_composing_model_is_refused(server: ServerProcess) -> None:
    reply = post(server, "/v2/repository/models/ens_missing/load")
    assert reply.status_and_text() == (400, json.dumps({
        "error": "load failed for model 'ens_missing': ensemble ens_missing contains models "
                 "that are not available or ambiguous: nothere\n"}, separators=(",", ":")))
    # As in Triton, the refused ensemble has no state in the index.
    assert index(server, "ens_missing") == [{"name": "ens_missing"}]


def test_ensemble_with_a_failed_composing_model_is_refused(server: ServerProcess) -> None:
    client = grpcclient.InferenceServerClient(server.grpc_url)
    with pytest.raises(InferenceServerException) as info:
        client.load_model("ens_broken")
    assert info.value.status() == "StatusCode.INVALID_ARGUMENT"
    assert info.value.message().startswith(
        "load failed for model 'ens_broken': ensemble 'ens_broken' depends on 'broken' which "
        "has no loaded version. Model 'broken' loading failed with error: version 1 is at "
        "UNAVAILABLE state: ")
    assert index(server, "ens_broken") == [{"name": "ens_broken"}]
    assert index(server, "broken")[0]["state"] == "UNAVAILABLE"


def test_unloading_a_composing_model_unloads_the_ensembles_using_it(server: ServerProcess) -> None:
    client = httpclient.InferenceServerClient(server.http_url)
    client.load_model("ens_c")
    assert client.is_model_ready("ens_c")
    client.unload_model("c")
    assert not client.is_model_ready("c")
    assert not client.is_model_ready("ens_c")
    assert index(server, "ens_c")[0] == {
        "name": "ens_c", "version": "1", "state": "UNAVAILABLE", "reason": "unloaded"}


def test_an_unload_during_an_ensembles_load_waits_and_unloads_it_too(tmp_path: Path) -> None:
    """Triton's L0_lifecycle: the composing model takes seconds to load; an unload of it
    arriving meanwhile waits for the ensemble's load request, then unloads both (before, it
    found nothing loaded yet, and the ensemble came up READY over an unloaded step)."""
    write_model(tmp_path, "slow", identity_config(
        "slow", extra='parameters { key: "creation_delay_sec" value: { string_value: "3" } }'))
    write_model(tmp_path, "ens_slow", ensemble_config("ens_slow", "slow"))
    with ServerProcess([tmp_path], "--model-control-mode=explicit") as process:
        def load() -> None:  # each thread its own client (tritonclient's http is gevent's)
            httpclient.InferenceServerClient(process.http_url, network_timeout=60).load_model(
                "ens_slow")

        loading = threading.Thread(target=load)
        loading.start()
        process.wait_log("Creation delay is set")
        client = httpclient.InferenceServerClient(process.http_url, network_timeout=60)
        client.unload_model("slow")
        loading.join()
        assert not client.is_model_ready("slow")
        assert not client.is_model_ready("ens_slow")


def test_unload_dependents_unloads_the_composing_models(server: ServerProcess) -> None:
    client = httpclient.InferenceServerClient(server.http_url)
    client.load_model("ens_d")
    assert client.is_model_ready("ens_d") and client.is_model_ready("d")
    client.unload_model("ens_d", unload_dependents=True)
    assert not client.is_model_ready("d")
    assert index(server, "d")[0]["reason"] == "unloaded"


def test_unload_without_dependents_keeps_the_composing_models(server: ServerProcess) -> None:
    client = grpcclient.InferenceServerClient(server.grpc_url)
    client.load_model("ens_e")
    assert client.is_model_ready("ens_e")
    client.unload_model("ens_e")
    assert not client.is_model_ready("ens_e")
    assert client.is_model_ready("e")


def test_none_mode_loads_composing_models_and_refuses_broken_ensembles(tmp_path: Path) -> None:
    build(tmp_path)
    with ServerProcess([tmp_path], "--exit-on-error=false") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        for name in ("a", "b", "c", "d", "e"):
            assert client.is_model_ready(name)
        assert index(server, "ens_missing") == [{"name": "ens_missing"}]
        assert index(server, "ens_broken") == [{"name": "ens_broken"}]
    assert "ensemble ens_missing contains models that are not available" in server.log()


def test_none_mode_with_a_broken_ensemble_fails_start_up(tmp_path: Path) -> None:
    write_model(tmp_path, "a", identity_config("a"))
    write_model(tmp_path, "ens_missing", ensemble_config("ens_missing", "a", "nothere"))
    server = ServerProcess([tmp_path])
    server.start(wait_ready=False)
    assert server.wait_exit(60) != 0
    assert "failed to load all models" in server.log()


def config(text: str) -> mc.ModelConfig:
    return text_format.Parse(text, mc.ModelConfig())


def test_graph_composing_models_users_and_load_order() -> None:
    graph = DependencyGraph()
    graph.set("outer", config(ensemble_config("outer", "inner", "x")))
    graph.set("inner", config(ensemble_config("inner", "x", "y", "x")))
    graph.set("x", config(identity_config("x")))
    assert composing_models(config(ensemble_config("inner", "x", "y", "x"))) == ["x", "y"]
    assert composing_models(config(identity_config("x"))) == []
    assert graph.users("x") == ["inner", "outer"]
    assert graph.users("y") == ["inner", "outer"]
    assert graph.users("outer") == []
    assert graph.load_order(["outer", "inner", "x", "y"]) == ["x", "y", "inner", "outer"]
    graph.remove("outer")
    assert graph.users("x") == ["inner"]


def test_graph_load_order_survives_a_cycle() -> None:
    graph = DependencyGraph()
    graph.set("p", config(ensemble_config("p", "q")))
    graph.set("q", config(ensemble_config("q", "p")))
    assert sorted(graph.load_order(["p", "q"])) == ["p", "q"]


class RecordingLifeCycle:
    """Stands in for ModelLifeCycle: every model READY until unloaded; unloads recorded."""

    def __init__(self, loaded: set[str]) -> None:
        self.loaded = set(loaded)
        self.unloaded: list[str] = []

    def status(self) -> dict:
        return {n: {1: VersionStatus(1, ModelReadyState.READY)} for n in self.loaded}

    def unload(self, name: str) -> None:
        self.unloaded.append(name)
        self.loaded.discard(name)


def test_unload_dependents_keeps_composing_models_another_loaded_ensemble_uses() -> None:
    # Compared with Triton 2.51: ens and ens2 both use plus1; unloading ens with
    # unload_dependents leaves plus1 (and ens2) READY.
    lifecycle = RecordingLifeCycle({"ens", "ens2", "plus1", "only_ens"})
    scanner = RepositoryScanner([], auto_complete=False)  # namespacing off
    control = ModelRepositoryManager(scanner, lifecycle, mode="explicit")  # type: ignore[arg-type]
    control.graph.set("ens", config(ensemble_config("ens", "plus1", "only_ens")))
    control.graph.set("ens2", config(ensemble_config("ens2", "plus1")))
    control.unload("ens", unload_dependents=True)
    assert lifecycle.unloaded == ["ens", "only_ens"]
    control.unload("plus1", unload_dependents=False)
    assert lifecycle.unloaded == ["ens", "only_ens", "ens2", "plus1"]
