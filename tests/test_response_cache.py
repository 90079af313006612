"""The response cache (`--cache-config local,size=N`, `response_cache { enable: true }`).

The Python model `counter` answers OUTPUT0 = INPUT0 and CALLS = how many requests it has
executed so far, so a response served from the cache shows the CALLS of the request that
computed it. The cache holds 1000 bytes: four responses to a [1, 50] FP32 input (200 bytes of
OUTPUT0 + 8 of CALLS each).
"""

from __future__ import annotations

import asyncio
import subprocess
import urllib.request
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from support.models import identity_config, write_model
from support.server_process import ServerProcess
from tritium.frontend.loop_bridge import answer
from tritium.request import InferenceRequest, InferenceResponse
from tritium.server import InferenceServer, ServerOptions
from tritium.tensor import Tensor

COUNTER = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.calls = 0

    def execute(self, requests):
        responses = []
        for request in requests:
            self.calls += 1
            data = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUTPUT0", data),
                pb_utils.Tensor("CALLS", np.array([[self.calls]], np.int64)),
            ]))
        return responses
'''


# An ensemble that caches, over a step that does not.
ENSEMBLE = """
    name: "cached_ensemble"
    platform: "ensemble"
    max_batch_size: 8
    input { name: "X" data_type: TYPE_FP32 dims: [ -1 ] }
    output { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] }
    output { name: "CALLS" data_type: TYPE_INT64 dims: [ 1 ] }
    ensemble_scheduling { step [ { model_name: "step" model_version: -1
        input_map { key: "INPUT0" value: "X" }
        output_map [ { key: "OUTPUT0" value: "Y" }, { key: "CALLS" value: "CALLS" } ] } ] }
    response_cache { enable: true }
    """


def counter_config(name: str, cache: bool) -> str:
    return f"""
        name: "{name}"
        backend: "python"
        max_batch_size: 8
        input {{ name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] }}
        output {{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] }}
        output {{ name: "CALLS" data_type: TYPE_INT64 dims: [ 1 ] }}
        instance_group {{ count: 1 kind: KIND_CPU }}
        response_cache {{ enable: {str(cache).lower()} }}
        """


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp("cache")
    for name, cache in (("counter", True), ("counter_lru", True), ("uncached", False),
                        ("step", False)):
        write_model(repo, name, counter_config(name, cache), files={"1/model.py": COUNTER})
    write_model(repo, "cached_ensemble", ENSEMBLE)
    with ServerProcess([repo], "--cache-config=local,size=1000") as process:
        yield process


@pytest.fixture
def client(server: ServerProcess) -> httpclient.InferenceServerClient:
    return httpclient.InferenceServerClient(server.http_url)


def calls(client: Any, model: str, data: np.ndarray, outputs: list[str] | None = None,
          **options: Any) -> int:
    """Infer and return CALLS (the count of the execution that computed the answer)."""
    tensor = httpclient.InferInput("INPUT0", list(data.shape), "FP32")
    tensor.set_data_from_numpy(data)
    wanted = [httpclient.InferRequestedOutput(n) for n in (outputs or ["OUTPUT0", "CALLS"])]
    result = client.infer(model, [tensor], outputs=wanted, **options)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)
    return int(result.as_numpy("CALLS")[0, 0]) if result.as_numpy("CALLS") is not None else -1


def metrics(server: ServerProcess) -> dict[str, float]:
    """Every sample of the metrics page, by its name and labels as printed."""
    text = urllib.request.urlopen(server.metrics_url, timeout=5).read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            samples[key] = float(value)
    return samples


def per_model(name: str, model: str) -> str:
    return f'{name}{{model="{model}",version="1"}}'


def test_identical_request_is_answered_from_the_cache(server, client):
    data = np.arange(4, dtype=np.float32).reshape(1, 4)
    before = metrics(server)
    first = calls(client, "counter", data)
    assert calls(client, "counter", data) == first
    # Through gRPC, asking for no output in particular (so for all of them): the same request.
    grpc = grpcclient.InferenceServerClient(server.grpc_url)
    tensor = grpcclient.InferInput("INPUT0", [1, 4], "FP32")
    tensor.set_data_from_numpy(data)
    assert int(grpc.infer("counter", [tensor]).as_numpy("CALLS")[0, 0]) == first
    server.wait_metric("nv_inference_exec_count", "counter",  # recorded after answering
                       before.get(per_model("nv_inference_exec_count", "counter"), 0) + 1)
    after = metrics(server)

    def delta(name: str) -> float:
        key = per_model(name, "counter")
        return after[key] - before.get(key, 0)

    assert delta("nv_cache_num_hits_per_model") == 2
    assert delta("nv_cache_num_misses_per_model") == 1
    assert delta("nv_inference_request_success") == 3
    assert delta("nv_inference_count") == 1  # cached requests are not inferences
    assert delta("nv_inference_exec_count") == 1
    assert after["nv_cache_num_entries"] >= 1
    assert 0 < after["nv_cache_util"] <= 1


def test_ensemble_answers_from_the_cache_without_running_its_steps(server, client):
    data = np.full((1, 3), 5, np.float32)
    tensor = httpclient.InferInput("X", [1, 3], "FP32")
    tensor.set_data_from_numpy(data)
    first = client.infer("cached_ensemble", [tensor])
    second = client.infer("cached_ensemble", [tensor])
    assert (second.as_numpy("Y") == data).all()
    # The step ran once: the second answer is the first one, from the cache.
    assert second.as_numpy("CALLS")[0, 0] == first.as_numpy("CALLS")[0, 0]
    stats = client.get_inference_statistics("cached_ensemble")["model_stats"][0]
    assert stats["inference_stats"]["cache_hit"]["count"] == 1
    assert stats["inference_stats"]["cache_miss"]["count"] == 1
    assert stats["inference_stats"]["success"]["count"] == 2
    step = client.get_inference_statistics("step")["model_stats"][0]
    assert step["execution_count"] == 1


def test_ensemble_with_a_decoupled_step_cannot_cache(tmp_path):
    write_model(tmp_path, "repeat_int32", """
        name: "repeat_int32"
        backend: "repeat"
        model_transaction_policy { decoupled: true }
        input [ { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] },
                { name: "DELAY" data_type: TYPE_UINT32 dims: [ -1 ] optional: true },
                { name: "WAIT" data_type: TYPE_UINT32 dims: [ 1 ] optional: true } ]
        output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] },
                 { name: "IDX" data_type: TYPE_UINT32 dims: [ 1 ] } ]
        """)
    write_model(tmp_path, "streamed", """
        name: "streamed"
        platform: "ensemble"
        input { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] }
        output { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }
        ensemble_scheduling { step [ { model_name: "repeat_int32" model_version: -1
            input_map { key: "IN" value: "IN" } output_map { key: "OUT" value: "OUT" } } ] }
        response_cache { enable: true }
        """)
    with ServerProcess([tmp_path], "--cache-config=local,size=1000",
                       "--model-control-mode=explicit") as process:
        client = httpclient.InferenceServerClient(process.http_url)
        with pytest.raises(Exception, match="Response Cache does not currently support model "
                                            "streamed with 'decoupled' transaction policy"):
            client.load_model("streamed")


@pytest.mark.parametrize("change", ["data", "shape", "outputs", "parameters"])
def test_a_different_request_is_computed(client, change):
    data = np.full((1, 6), 7, np.float32)
    first = calls(client, "counter", data)
    if change == "data":
        again = calls(client, "counter", data + 1)
    elif change == "shape":  # same bytes, other shape (Triton would answer from the cache)
        again = calls(client, "counter", data.reshape(2, 3))
    elif change == "outputs":
        again = calls(client, "counter", data, outputs=["OUTPUT0"])
        assert again == -1  # only OUTPUT0 came back: this was not the cached response
        again = calls(client, "counter", data, outputs=["CALLS", "OUTPUT0"])
        assert again == first  # the same outputs in another order are the same request
        return
    else:
        again = calls(client, "counter", data, parameters={"flavour": "mint"})
    assert again > first


def test_least_recently_used_response_is_evicted_first(server, client):
    # Each response is a 321-byte entry as Triton packs it (200 + 8 bytes of data, plus the
    # outputs' names, datatypes, shapes and lengths): three fill the 1000-byte cache.
    rows = [np.full((1, 50), float(i), np.float32) for i in range(4)]
    first = [calls(client, "counter_lru", r) for r in rows[:3]]  # the cache is full now
    evictions = metrics(server)["nv_cache_num_evictions"]
    assert calls(client, "counter_lru", rows[0]) == first[0]  # a hit: rows[0] is fresh again
    # Evicts rows[1], the least recently used of the three (and whatever older tests left).
    calls(client, "counter_lru", rows[3])
    assert metrics(server)["nv_cache_num_evictions"] > evictions
    assert calls(client, "counter_lru", rows[0]) == first[0]
    assert calls(client, "counter_lru", rows[1]) > first[2]  # computed again


def test_response_larger_than_the_cache_is_served_but_not_kept(server, client):
    # 888 bytes of data, but as Triton counts the entry (names, datatypes, shapes and lengths
    # too) 1001 bytes: more than the 1000-byte cache, refused with Triton's words.
    big = np.ones((1, 220), np.float32)
    first = calls(client, "counter", big)
    assert calls(client, "counter", big) > first
    assert any(m.startswith("Failed to insert key [") and m.endswith(
        "] into response cache: Requested byte_size: 1001 is greater than total cache size: 1000")
        for m in server.log_messages())


def test_model_without_response_cache_always_executes(client):
    data = np.zeros((1, 3), np.float32)
    first = calls(client, "uncached", data)
    assert calls(client, "uncached", data) == first + 1


def refused_start(tmp_path, *flags: str) -> subprocess.CompletedProcess:
    write_model(tmp_path, "counter", counter_config("counter", True),
                files={"1/model.py": COUNTER})
    process = ServerProcess([tmp_path], *flags)
    run = subprocess.run(process.command(), env=process.environment(), capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 1
    return run


@pytest.mark.parametrize("flags, message", [
    (["--cache-config=memcached,host=localhost"],
     "unable to find cache 'memcached': Tritium provides the 'local' and 'redis' caches"),
    (["--cache-config=local,size=lots"],
     "cache 'local' size must be a number of bytes, got 'lots'"),
    # L0_response_cache: Triton's server supports a single cache (before looking any up).
    (["--cache-config=local,size=8192", "--cache-config=redis,key=value"],
     "found multiple cache configurations, but only a single cache is currently supported"),
])
def test_unknown_cache_is_refused_at_startup(tmp_path, flags, message):
    run = refused_start(tmp_path, *flags)
    # One line saying what is wrong, as tritonserver's (the code as Triton names it), not a
    # traceback.
    assert run.stderr == f"error: creating server: Invalid argument - {message}\n"


def test_both_cache_flags_are_refused_as_by_tritonserver(tmp_path):
    run = refused_start(tmp_path, "--response-cache-byte-size=12345",
                        "--cache-config=local,size=67890")
    assert run.stderr.strip() == ("Error: Incompatible flags --response-cache-byte-size and "
                                  "--cache-config both provided. Please provide one or the other.")


def test_statistics_count_hits_as_successes_without_compute(tmp_path):
    write_model(tmp_path, "cached_identity", identity_config(
        "cached_identity", extra="response_cache { enable: true }"))
    server = InferenceServer(ServerOptions([tmp_path], cache_config={"local": {"size": "4096"}}))
    server.start()
    try:
        async def scenario() -> list[InferenceResponse]:
            data = np.ones((1, 2), np.float32)
            return [await answer(server.infer_async, InferenceRequest(
                "cached_identity", inputs={"INPUT0": Tensor.from_numpy("INPUT0", data)}))
                for _ in range(3)]

        assert all(r.error is None for r in asyncio.run(scenario()))
        statistics = server.lifecycle.get("cached_identity").statistics
    finally:
        server.shutdown()  # an instance records its execution after it has responded
    snapshot = statistics.snapshot()
    assert snapshot.success.count == snapshot.queue.count == 3
    assert snapshot.cache_hit.count == 2 and snapshot.cache_hit.ns > 0
    assert snapshot.cache_miss.count == 1 and snapshot.cache_miss.ns > 0
    assert snapshot.compute_infer.count == snapshot.inference_count == 1
    assert snapshot.execution_count == 1
