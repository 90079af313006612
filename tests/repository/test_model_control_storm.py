"""Model control under load: a storm of concurrent load/unload requests of one model, over
HTTP and gRPC at once, while a good client infers on another model and on the stormed one.

Loads and unloads of one model run one at a time on the model-control workers (requests that
pile up meanwhile share one execution per kind), so the storm is answered in a bounded time,
every request gets 200 (or a clean error), the other model is served throughout, the stormed
one answers each call (its result or "not found"/"not ready"), and the model's final state is
the same whichever way it is read. Before, each request held a thread of the default pool for
one full load or unload in turn, and a good client once timed out (run with `-s` for the
figures).
"""

from __future__ import annotations

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from support.control_storm import GoodClient, describe, storm
from support.models import identity_config, write_model
from support.server_process import ServerProcess

STORM = 300
GOOD_TIMEOUT_S = 60


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    repo = tmp_path_factory.mktemp("storm")
    for name in ("stormed", "other"):
        write_model(repo, name, identity_config(name))
    with ServerProcess([repo], "--model-control-mode=explicit", "--load-model=stormed",
                       "--load-model=other") as process:
        yield process


def _infers(url: str, model: str) -> bool:
    data = np.ones((1, 4), np.float32)
    with httpclient.InferenceServerClient(url) as client:
        tensor = httpclient.InferInput("INPUT0", [1, 4], "FP32")
        tensor.set_data_from_numpy(data)
        return bool(np.array_equal(client.infer(model, [tensor]).as_numpy("OUTPUT0"), data))


def test_a_load_unload_storm_is_answered_and_leaves_others_served(server) -> None:
    with GoodClient(server, ["other", "stormed"], GOOD_TIMEOUT_S) as good:
        result = storm(server, "stormed", STORM)
    print("\n" + describe(result, good))
    assert len(result.statuses) == STORM
    assert set(result.statuses) <= {"200", "grpc:OK"}, describe(result, good)
    assert good.errors["other"] == [] and good.ok["other"] > 0, describe(result, good)
    for error in good.errors["stormed"]:  # refused cleanly while unloaded, never hung
        assert "unknown model" in error or "not at ready state" in error, error


def test_the_final_state_is_consistent(server) -> None:
    storm(server, "stormed", 50, seed=1)
    grpc = grpcclient.InferenceServerClient(server.grpc_url)
    http = httpclient.InferenceServerClient(server.http_url)
    ready = http.is_model_ready("stormed")
    assert grpc.is_model_ready("stormed") == ready
    index = {m["name"]: m.get("state") for m in http.get_model_repository_index()}
    assert (index["stormed"] == "READY") == ready
    http.load_model("stormed")
    assert _infers(server.http_url, "stormed")
    grpc.unload_model("stormed")
    assert not http.is_model_ready("stormed")
    http.load_model("stormed")
    assert _infers(server.http_url, "other") and _infers(server.http_url, "stormed")
