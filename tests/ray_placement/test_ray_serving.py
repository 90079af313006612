"""Python-backend instances placed on a Ray cluster answer exactly as local ones.

One server (`--ray-address` at the session's simulated two-node cluster) serves each test
model twice: on Ray (`ray` model parameter) and locally (the same model.py, no parameter), and
the tests compare the two over HTTP and gRPC with the real tritonclient.
"""

from __future__ import annotations

import queue
import re
import time
import urllib.request
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from support import onnx_models, torch_models
from support.models import infer_arrays, write_model
from support.ray_placement import actor_nodes, copy_python_model, ray_parameter, server_actors
from support.sequence_models import accumulator_config, add_accumulator
from support.server_process import ServerProcess

# add_sub's two instances cannot share a 1-CPU node; the other models' eight fit anywhere.
SPREAD = {"num_cpus": 0.55, "scheduling_strategy": "SPREAD"}
SMALL = {"num_cpus": 0.05}
SERVER_ID = "ray-serving"
PROTOCOLS = {"http": httpclient, "grpc": grpcclient}

ENSEMBLE = """
name: "{name}"
platform: "ensemble"
max_batch_size: 0
input [ { name: "A" data_type: TYPE_FP32 dims: [ 4 ] },
        { name: "B" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "SUM" data_type: TYPE_FP32 dims: [ 4 ] },
         { name: "DIFF" data_type: TYPE_FP32 dims: [ 4 ] } ]
ensemble_scheduling { step [ {
  model_name: "{step}" model_version: -1
  input_map { key: "INPUT0" value: "A" } input_map { key: "INPUT1" value: "B" }
  output_map { key: "OUTPUT0" value: "SUM" } output_map { key: "OUTPUT1" value: "DIFF" }
} ] }
"""

TORCH_ADD_SUB = """
platform: "pytorch_libtorch"
max_batch_size: 8
input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] },
        { name: "INPUT__1" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 4 ] },
         { name: "OUTPUT__1" data_type: TYPE_FP32 dims: [ 4 ] } ]
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("ray_repo")
    copy_python_model(repo, "args_echo", "args_echo", ray=SMALL)
    for source in ("add_sub", "bytes_model", "repeat", "bls", "custom_metrics"):
        spread = source == "add_sub"
        copy_python_model(repo, source, source, ray=SPREAD if spread else SMALL,
                          count=2 if spread else 1)
        copy_python_model(repo, source, f"{source}_local", ray=None)
    for step in ("add_sub", "add_sub_local"):
        name = step.replace("add_sub", "add_sub_ensemble")
        write_model(repo, name, ENSEMBLE.replace("{name}", name).replace("{step}", step))
    # A framework backend on Ray (its configuration auto-completed from the file), batching in
    # front as for a local instance.
    for name, extra in (("onnx_add_sub", ray_parameter(SMALL)), ("onnx_add_sub_local", "")):
        write_model(repo, name, f'backend: "onnxruntime"\nmax_batch_size: 8\n'
                                f"dynamic_batching {{ }}\n{extra}")
        onnx_models.save(onnx_models.add_sub(), repo / name / "1" / "model.onnx")
    for name, extra in (("torch_add_sub", ray_parameter(SMALL)), ("torch_add_sub_local", "")):
        write_model(repo, name, TORCH_ADD_SUB + extra)
        torch_models.save(torch_models.AddSub(), repo / name / "1" / "model.pt")
    # Sequence batching in front of an instance on Ray: the direct strategy, two slots.
    for name, extra in (("accumulator", ray_parameter(SMALL)), ("accumulator_local", "")):
        add_accumulator(repo, name, accumulator_config(name, 2) + extra)
    # A misspelt Ray option is refused at load, not silently run locally.
    copy_python_model(repo, "add_sub", "bad_ray", ray={"num_cpu": 1})
    return repo


@pytest.fixture(scope="module")
def server(ray_cluster, repo: Path):
    process = ServerProcess([repo], f"--ray-address={ray_cluster.address}",
                            f"--id={SERVER_ID}", "--exit-on-error=false")
    process.start(timeout=180)  # starting actors takes a while on a loaded machine
    try:
        yield process
    finally:
        process.stop()


def add_sub_inputs() -> dict[str, np.ndarray]:
    return {"INPUT0": np.array([1, 2, 3, 4], np.float32),
            "INPUT1": np.array([0.5, 0.5, 2, 8], np.float32)}


def outputs(result, names: list[str]) -> dict[str, np.ndarray]:
    return {name: result.as_numpy(name) for name in names}


def test_instances_are_actors_spread_over_the_nodes(server, ray_cluster):
    nodes = actor_nodes(SERVER_ID, "add_sub")
    assert len(nodes) == 2, nodes
    assert len(set(nodes.values())) == 2, f"both instances on one node: {nodes}"
    cluster_nodes = {node.node_id for node in ray_cluster.list_all_nodes()}
    assert set(nodes.values()) <= cluster_nodes
    assert all(name.split("/")[3] in ("add_sub_0_0", "add_sub_0_1") for name in nodes)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("model,arrays,names", [
    ("add_sub", add_sub_inputs(), ["OUTPUT0", "OUTPUT1"]),
    ("onnx_add_sub", {"INPUT0": np.array([[1, 2, 3, 4]], np.float32),
                      "INPUT1": np.array([[4, 3, 2, 1]], np.float32)}, ["OUTPUT0", "OUTPUT1"]),
    ("torch_add_sub", {"INPUT__0": np.array([[1, 2, 3, 4]], np.float32),
                       "INPUT__1": np.array([[4, 3, 2, 1]], np.float32)},
     ["OUTPUT__0", "OUTPUT__1"]),
    ("bytes_model", {"TEXT": np.array([b"ray", b"", "n\u00e4he".encode()], np.object_)},
     ["UPPER", "LENGTH"]),
])
def test_answers_as_locally(server, protocol, model, arrays, names):
    module = PROTOCOLS[protocol]
    url = server.http_url if protocol == "http" else server.grpc_url
    on_ray = outputs(infer_arrays(module, url, model, arrays), names)
    local = outputs(infer_arrays(module, url, f"{model}_local", arrays), names)
    for name in names:
        assert on_ray[name].dtype == local[name].dtype
        np.testing.assert_array_equal(on_ray[name], local[name])
    if model == "add_sub":
        np.testing.assert_array_equal(on_ray["OUTPUT0"], arrays["INPUT0"] + arrays["INPUT1"])


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("target", ["add_sub", "add_sub_local"])
def test_bls_goes_through_the_owning_server(server, protocol, target):
    """bls runs on Ray; its BLS request comes back to this server, which routes it to a
    model on Ray or a local one."""
    module = PROTOCOLS[protocol]
    url = server.http_url if protocol == "http" else server.grpc_url
    arrays = {"MODEL_NAME": np.array([target.encode()], np.object_), **add_sub_inputs()}
    result = infer_arrays(module, url, "bls", arrays)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"),
                                  arrays["INPUT0"] + arrays["INPUT1"])
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"),
                                  arrays["INPUT0"] - arrays["INPUT1"])


def test_bls_error_is_the_local_one(server):
    arrays = {"MODEL_NAME": np.array([b"no_such_model"], np.object_), **add_sub_inputs()}
    errors = []
    for model in ("bls", "bls_local"):
        with pytest.raises(httpclient.InferenceServerException) as raised:
            infer_arrays(httpclient, server.http_url, model, arrays)
        # the same words but for the instance's name and path ("bls_0_1", "bls_local_0_0")
        errors.append(re.sub(r"bls(_local)?(_0_\d)?", "<bls>", raised.value.message()))
    assert errors[0] == errors[1]
    assert "no_such_model" in errors[0]


def stream(server, model: str, values: list[int]) -> list[tuple]:
    """Every response of one decoupled request over a gRPC stream."""
    client = grpcclient.InferenceServerClient(server.grpc_url)
    received: queue.Queue = queue.Queue()
    client.start_stream(callback=partial(lambda q, result, error: q.put((result, error)),
                                         received))
    try:
        tensor = grpcclient.InferInput("IN", [len(values)], "INT32")
        tensor.set_data_from_numpy(np.array(values, np.int32))
        client.async_stream_infer(model, [tensor], enable_empty_final_response=True)
        answers = []
        while True:
            result, error = received.get(timeout=60)
            if error is not None:
                answers.append(("error", str(error)))
                continue
            final = result.get_response().parameters["triton_final_response"].bool_param
            if result.get_response().outputs:
                answers.append((int(result.as_numpy("OUT")[0]), int(result.as_numpy("IDX")[0]),
                                final))
            else:
                answers.append(("empty", final))
            if final:
                return answers
    finally:
        client.stop_stream()
        client.close()


@pytest.mark.parametrize("values", [[5, 6, 7], [3, -1, 4], []])
def test_decoupled_streams_as_locally(server, values):
    on_ray = stream(server, "repeat", values)
    assert on_ray == stream(server, "repeat_local", values)
    if values and min(values) >= 0:
        assert on_ray == [(v, i, i == len(values) - 1) for i, v in enumerate(values)]


def test_decoupled_over_http_as_locally(server):
    answers = []
    for model in ("repeat", "repeat_local"):
        try:
            result = infer_arrays(httpclient, server.http_url, model,
                                  {"IN": np.array([9], np.int32)})
            answers.append(("ok", result.as_numpy("OUT").tolist()))
        except httpclient.InferenceServerException as exc:
            answers.append(("error", exc.status(), exc.message()))
    assert answers[0] == answers[1]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_ensemble_step_on_ray(server, protocol):
    module = PROTOCOLS[protocol]
    url = server.http_url if protocol == "http" else server.grpc_url
    arrays = add_sub_inputs()
    inputs = {"A": arrays["INPUT0"], "B": arrays["INPUT1"]}
    result = infer_arrays(module, url, "add_sub_ensemble", inputs)
    local = infer_arrays(module, url, "add_sub_ensemble_local", inputs)
    for name in ("SUM", "DIFF"):
        np.testing.assert_array_equal(result.as_numpy(name), local.as_numpy(name))
    np.testing.assert_array_equal(result.as_numpy("SUM"), arrays["INPUT0"] + arrays["INPUT1"])
    np.testing.assert_array_equal(result.as_numpy("DIFF"), arrays["INPUT0"] - arrays["INPUT1"])


def running_sums(server, protocol: str, model: str) -> list[tuple[int, int]]:
    """Two sequences sent interleaved, one request at a time: (sequence id, OUTPUT) each."""
    module = PROTOCOLS[protocol]
    url = server.http_url if protocol == "http" else server.grpc_url
    client = module.InferenceServerClient(url)
    steps = [(101, 1), (102, 10), (101, 2), (102, 20), (101, 3), (102, 30)]
    answers = []
    for index, (sequence, value) in enumerate(steps):
        tensor = module.InferInput("INPUT", [1, 1], "INT32")
        tensor.set_data_from_numpy(np.array([[value]], np.int32))
        result = client.infer(model, [tensor], sequence_id=sequence,
                              sequence_start=index < 2, sequence_end=index >= 4)
        answers.append((sequence, int(result.as_numpy("OUTPUT")[0][0])))
    client.close()
    return answers


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_sequence_batching_in_front_of_ray_as_locally(server, protocol):
    on_ray = running_sums(server, protocol, "accumulator")
    assert on_ray == running_sums(server, protocol, "accumulator_local")
    assert on_ray == [(101, 1), (102, 10), (101, 3), (102, 30), (101, 6), (102, 60)]


def requests_counted(server) -> float:
    with urllib.request.urlopen(server.metrics_url, timeout=10) as response:
        text = response.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith('tritium_test_requests_total{model="custom_metrics"'))


def test_custom_metrics_reach_the_owning_server(server):
    counts = [
        float(infer_arrays(httpclient, server.http_url, "custom_metrics",
                           {"VALUE": np.array([value], np.float64)}).as_numpy("COUNT")[0])
        for value in (3.0, 30.0, 300.0)
    ]
    assert counts == [1.0, 2.0, 3.0]  # the instance's own metric, read back in the actor
    # Metric updates travel on the actor's stream, the responses with execute: wait for them.
    deadline = time.monotonic() + 30
    while (total := requests_counted(server)) != 3.0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert total == 3.0
    with urllib.request.urlopen(server.metrics_url, timeout=10) as response:
        text = response.read().decode()
    assert "# TYPE tritium_test_values histogram" in text


def test_statistics_count_requests_on_ray(server):
    client = httpclient.InferenceServerClient(server.http_url)
    before = client.get_inference_statistics("add_sub")["model_stats"][0]["inference_count"]
    infer_arrays(httpclient, server.http_url, "add_sub", add_sub_inputs())
    after = client.get_inference_statistics("add_sub")["model_stats"][0]["inference_count"]
    assert after == before + 1
    assert client.is_model_ready("add_sub")


def test_a_second_server_gets_its_own_actors(server, ray_cluster, tmp_path):
    """Two servers, the same model names, one cluster: each has its own actors. (The second
    asks for less CPU: the first's add_sub instances fill most of the two nodes.)"""
    first = set(server_actors(SERVER_ID, "add_sub"))
    copy_python_model(tmp_path, "add_sub", "add_sub", ray=SMALL, count=2)
    second = ServerProcess([tmp_path], f"--ray-address={ray_cluster.address}", "--id=second")
    second.start(timeout=180)
    try:
        theirs = set(server_actors("second", "add_sub"))
        assert len(theirs) == 2 and not theirs & first
        assert set(server_actors(SERVER_ID, "add_sub")) == first
        result = infer_arrays(httpclient, second.http_url, "add_sub", add_sub_inputs())
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), [1.5, 2.5, 5, 12])
    finally:
        second.stop()
    deadline = time.monotonic() + 120
    while server_actors("second", "add_sub") and time.monotonic() < deadline:
        time.sleep(0.2)  # Ray ends a driver's actors shortly after the driver exits
    assert not server_actors("second", "add_sub")
    assert set(server_actors(SERVER_ID, "add_sub")) == first


def test_a_server_without_ray_address_never_imports_ray(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    copy_python_model(repo, "add_sub", "add_sub", ray={"num_cpus": 1})
    process = ServerProcess([repo], env={"PYTHONPROFILEIMPORTTIME": "1"})
    with process:
        result = infer_arrays(httpclient, process.http_url, "add_sub", add_sub_inputs())
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), [1.5, 2.5, 5, 12])
    imported = [line.rsplit("|", 1)[-1].strip() for line in process.log().splitlines()
                if line.startswith("import time:")]
    assert "tritium.server" in imported
    assert not [name for name in imported if name == "ray" or name.startswith("ray.")]



def test_a_bad_ray_option_fails_the_load(server):
    index = {entry["name"]: entry for entry in
             httpclient.InferenceServerClient(server.http_url).get_model_repository_index()}
    assert index["bad_ray"]["state"] == "UNAVAILABLE"
    assert ("model 'bad_ray': parameter 'ray': unsupported Ray actor option(s) num_cpu"
            in index["bad_ray"]["reason"])
    assert index["add_sub"]["state"] == "READY"


def test_model_logs_reach_the_owning_servers_log(server):
    """pb_utils.Logger in a model on Ray logs through the server that owns the instance."""
    log = server.log()
    assert "[args_echo_0_0 on Ray] " in log
    assert "args_echo instance args_echo_0_0 is ready" in log
    assert "args_echo warns" in log
