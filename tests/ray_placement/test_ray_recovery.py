"""Instances on Ray survive their actor and their node: the requests the lost actor held fail
with an error naming the instance, readiness says so, the instance is placed again, later
requests succeed. And a reload changes the instance count under load without losing a request.
"""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest
import ray
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from support.models import infer_arrays
from support.ray_placement import actor_nodes, copy_python_model, server_actors
from support.server_process import ServerProcess

SMALL = {"num_cpus": 0.05}
SERVER_ID = "ray-recovery"
PINNED = {"num_cpus": 0.05, "resources": {"tritium_pin": 1}}


@pytest.fixture(scope="module")
def server(ray_cluster, tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp("ray_recovery_repo")
    copy_python_model(repo, "busy", "busy", ray=SMALL)
    copy_python_model(repo, "busy", "pinned", ray=PINNED)
    copy_python_model(repo, "add_sub", "add_sub", ray=SMALL)
    process = ServerProcess([repo], f"--ray-address={ray_cluster.address}",
                            f"--id={SERVER_ID}", "--model-control-mode=explicit",
                            "--load-model=busy", "--load-model=add_sub")
    process.start(timeout=180)  # starting actors takes a while on a loaded machine
    try:
        yield process
    finally:
        process.stop()


class InFlight(threading.Thread):
    """One busy request over gRPC, kept open for `seconds`; `.error` once it ends."""

    def __init__(self, server: ServerProcess, model: str, seconds: float) -> None:
        super().__init__(daemon=True)
        self.url, self.model, self.seconds = server.grpc_url, model, seconds
        self.error: grpcclient.InferenceServerException | None = None
        self.start()

    def run(self) -> None:
        try:
            infer_arrays(grpcclient, self.url, self.model,
                         {"SECONDS": np.array([self.seconds], np.float32)})
        except grpcclient.InferenceServerException as exc:
            self.error = exc


def assert_lost(error: grpcclient.InferenceServerException | None, instance: str,
                model: str) -> None:
    """The error of a request the lost actor held. Ray ends the actor and its child processes
    in no set order: the actor first (UNAVAILABLE, the lost instance), or its stub first (the
    python backend's INTERNAL, as for a local stub that dies)."""
    assert error is not None, "the request of the lost actor succeeded"
    assert (error.status(), error.message().split(":")[0]) in {
        ("StatusCode.UNAVAILABLE", f"instance '{instance}' of model '{model}' was lost"),
        ("StatusCode.INTERNAL", f"Stub process '{instance}' is not healthy."),
    }, (error.status(), error.message())


def busy_pid(server: ServerProcess, model: str) -> int:
    result = infer_arrays(httpclient, server.http_url, model,
                          {"SECONDS": np.array([0], np.float32)})
    return int(result.as_numpy("PID")[0])


def test_killed_actor_fails_its_requests_and_is_placed_again(server):
    actors = server_actors(SERVER_ID, "busy")
    assert len(actors) == 1, actors
    (name, actor), = actors.items()
    old_pid = busy_pid(server, "busy")
    held = InFlight(server, "busy", 60)
    server.wait_pending("busy", 1)
    ray.kill(actor)
    held.join(60)
    assert_lost(held.error, "busy_0_0", "busy")
    # The next request waits for the new actor and succeeds, in a new stub process.
    assert busy_pid(server, "busy") != old_pid
    actors = server_actors(SERVER_ID, "busy")
    assert len(actors) == 1, actors
    (new_name, _), = actors.items()
    assert new_name.rsplit("/", 1)[0] == name.rsplit("/", 1)[0] and new_name != name
    assert httpclient.InferenceServerClient(server.http_url).is_model_ready("busy")


def test_removed_node_is_replaced_by_any_node_with_room(server, ray_cluster):
    client = httpclient.InferenceServerClient(server.http_url)
    node = ray_cluster.add_node(num_cpus=1, resources={"tritium_pin": 1})
    ray_cluster.wait_for_nodes()
    client.load_model("pinned")
    try:
        assert list(actor_nodes(SERVER_ID, "pinned").values()) == [node.node_id]
        held = InFlight(server, "pinned", 120)
        server.wait_pending("pinned", 1)
        ray_cluster.remove_node(node)
        held.join(120)
        assert_lost(held.error, "pinned_0_0", "pinned")
        # No node has the resource the instance needs: not ready until one joins.
        assert not client.is_model_ready("pinned")
        replacement = ray_cluster.add_node(num_cpus=1, resources={"tritium_pin": 1})
        busy_pid(server, "pinned")
        assert list(actor_nodes(SERVER_ID, "pinned").values()) == [replacement.node_id]
        assert client.is_model_ready("pinned")
    finally:
        client.unload_model("pinned")
    ray_cluster.remove_node(replacement)


def test_reload_changes_the_instance_count_under_load(server):
    """Up from one actor to three, then down to two, while four clients keep asking."""
    client = httpclient.InferenceServerClient(server.http_url)
    assert len(server_actors(SERVER_ID, "add_sub")) == 1
    stop = threading.Event()
    outcomes: list[str] = []
    during_reload = threading.Event()

    def load() -> None:
        arrays = {"INPUT0": np.ones(4, np.float32), "INPUT1": np.ones(4, np.float32)}
        while not stop.is_set():
            try:
                result = infer_arrays(httpclient, server.http_url, "add_sub", arrays)
                outcomes.append("ok" if result.as_numpy("OUTPUT0").tolist() == [2] * 4
                                else "wrong")
            except httpclient.InferenceServerException as exc:
                outcomes.append(exc.message())
            if during_reload.is_set():
                outcomes.append("during")

    workers = [threading.Thread(target=load, daemon=True) for _ in range(4)]
    for worker in workers:
        worker.start()
    try:
        for count in (3, 2):
            config = client.get_model_config("add_sub")
            config["instance_group"][0]["count"] = count
            before = outcomes.count("during")
            during_reload.set()
            client.load_model("add_sub", config=json.dumps(config))
            during_reload.clear()
            assert outcomes.count("during") > before, "no request answered during the reload"
            deadline = time.monotonic() + 30
            while (len(server_actors(SERVER_ID, "add_sub")) != count
                   and time.monotonic() < deadline):
                time.sleep(0.1)  # the old version's actors end once their requests are done
            assert len(server_actors(SERVER_ID, "add_sub")) == count
            assert client.get_model_config("add_sub")["instance_group"][0]["count"] == count
    finally:
        stop.set()
        for worker in workers:
            worker.join(60)
    failures = [o for o in outcomes if o not in ("ok", "during")]
    assert not failures, failures[:5]
    assert outcomes.count("ok") > 0
