"""The model repository extension (index, load, unload) through tritonclient http, grpc, aio
and raw HTTP, against a server in EXPLICIT mode: what a client sees, with Triton's codes and
messages (compared with Triton 2.51)."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as aioclient
import tritonclient.http as httpclient
import tritonclient.http.aio as httpaio
from tritonclient.utils import InferenceServerException

from support.models import identity_config, write_model
from support.raw_http import call as raw_call
from support.raw_http import post
from support.server_process import ServerProcess

PLUS1_PY = """
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse([pb_utils.Tensor(
                "OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy() + 1)])
            for r in requests
        ]
"""

PY_CONFIG = json.dumps({
    "backend": "python",
    "max_batch_size": 0,
    "input": [{"name": "IN", "data_type": "TYPE_INT32", "dims": [1]}],
    "output": [{"name": "OUT", "data_type": "TYPE_INT32", "dims": [1]}],
})

NAMES = ["never", "loadme", "reloadme", "failreload", "versions", "ready_a", "ready_b"]


SLOW_INIT_PY = """
import time
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        time.sleep(2)

    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy())]) for r in requests]
"""

SLOW_INIT_CONFIG = """
name: "slowinit"
backend: "python"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
"""


@pytest.fixture(scope="module")
def explicit(tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp("explicit")
    for name in NAMES:
        extra = 'version_policy: { all: {} }' if name == "versions" else ""
        write_model(repo, name, identity_config(name, extra=extra),
                    versions=(1, 2, 3) if name == "versions" else (1,))
    write_model(repo, "slowinit", SLOW_INIT_CONFIG, files={"1/model.py": SLOW_INIT_PY})
    write_model(repo, "slowexec", identity_config("slowexec", extra=(
        'parameters { key: "execute_delay_ms" value: { string_value: "2000" } }')))
    with ServerProcess([repo], "--model-control-mode=explicit", "--load-model=ready_a") as server:
        yield server


def infer(client: httpclient.InferenceServerClient, model: str) -> np.ndarray:
    data = np.array([[1.5, 2.5]], np.float32)
    tensor = httpclient.InferInput("INPUT0", [1, 2], "FP32")
    tensor.set_data_from_numpy(data)
    return client.infer(model, [tensor]).as_numpy("OUTPUT0")


def states(server: ServerProcess, name: str) -> list[dict]:
    client = httpclient.InferenceServerClient(server.http_url)
    return [e for e in client.get_model_repository_index() if e["name"] == name]


def test_index_lists_never_loaded_models_by_name_only(explicit: ServerProcess) -> None:
    status, body = post(explicit, "/v2/repository/index").status_and_text()
    assert status == 200
    index = json.loads(body)
    assert {"name": "never"} in index
    assert {"name": "ready_a", "version": "1", "state": "READY"} in index


def test_index_ready_filter_over_http_grpc_and_aio(explicit: ServerProcess) -> None:
    status, body = post(explicit, "/v2/repository/index", raw=b'{"ready": true}').status_and_text()
    assert status == 200
    assert all(e["state"] == "READY" for e in json.loads(body))
    assert {"name": "ready_a", "version": "1", "state": "READY"} in json.loads(body)
    assert "never" not in [e["name"] for e in json.loads(body)]

    grpc = grpcclient.InferenceServerClient(explicit.grpc_url)
    ready = grpc.get_model_repository_index().models
    names = {m.name for m in ready if m.state == "READY"}
    assert "ready_a" in names
    never = [m for m in ready if m.name == "never"][0]
    assert (never.version, never.state, never.reason) == ("", "", "")

    async def aio_index() -> list:
        async with aioclient.InferenceServerClient(explicit.grpc_url) as client:
            return list((await client.get_model_repository_index()).models)

    assert "ready_a" in {m.name for m in asyncio.run(aio_index())}


def test_grpc_index_ready_filter(explicit: ServerProcess) -> None:
    # tritonclient never sets `ready`; other gRPC clients do.
    import grpc
    from tritonclient.grpc import service_pb2, service_pb2_grpc

    with grpc.insecure_channel(explicit.grpc_url) as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        ready = stub.RepositoryIndex(service_pb2.RepositoryIndexRequest(ready=True)).models
        everything = stub.RepositoryIndex(service_pb2.RepositoryIndexRequest()).models
    assert {m.state for m in ready} == {"READY"}
    assert "ready_a" in {m.name for m in ready}
    assert len(everything) > len(ready)


def test_index_wrong_json_types_are_triton_500s(explicit: ServerProcess) -> None:
    assert post(explicit, "/v2/repository/index", raw=b'{"ready": "x"}').status_and_text() == (
        500, '{"error":"attempt to access JSON non-boolean as boolean"}')
    status, body = post(explicit, "/v2/repository/index", raw=b"{bad").status_and_text()
    assert status == 500
    assert json.loads(body)["error"].startswith("failed to parse the request JSON buffer")


@pytest.mark.parametrize("path", ["/v2/repository/index", "/v2/repository/models/m/load",
                                  "/v2/repository/models/m/unload"])
def test_deeply_nested_json_is_refused_and_answered(explicit: ServerProcess, path: str) -> None:
    # Found by the fuzz run: Python's JSON parser gives up past some depth (about 1000 levels
    # on 3.11, 1500 on 3.12, 10000 on 3.13); the client still gets an answer, and the server
    # goes on.
    reply = post(explicit, path, raw=b"[" * 100_000)
    assert reply.status_and_text() == (
        400, '{"error":"failed to parse the request JSON buffer: document nesting is too deep"}')
    assert post(explicit, "/v2/repository/index", raw=b"{}").status_and_text()[0] == 200


def test_http_load_then_infer_then_unload(explicit: ServerProcess) -> None:
    client = httpclient.InferenceServerClient(explicit.http_url)
    assert not client.is_model_ready("loadme")
    client.load_model("loadme")
    assert client.is_model_ready("loadme")
    np.testing.assert_array_equal(infer(client, "loadme"), [[1.5, 2.5]])
    assert states(explicit, "loadme") == [{"name": "loadme", "version": "1", "state": "READY"}]
    client.unload_model("loadme")
    assert not client.is_model_ready("loadme")
    assert states(explicit, "loadme") == [
        {"name": "loadme", "version": "1", "state": "UNAVAILABLE", "reason": "unloaded"}
    ]
    with pytest.raises(InferenceServerException, match="loadme"):
        infer(client, "loadme")


def wait_for_state(server: ServerProcess, name: str, state: str) -> list[dict]:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        entries = states(server, name)
        if entries and entries[0].get("state") == state:
            return entries
        time.sleep(0.05)
    raise AssertionError(f"{name} never reached {state}: {states(server, name)}")


def test_index_shows_loading_while_a_model_loads(explicit: ServerProcess) -> None:
    client = httpclient.InferenceServerClient(explicit.http_url, network_timeout=60)
    loader = threading.Thread(target=client.load_model, args=("slowinit",))
    loader.start()
    assert wait_for_state(explicit, "slowinit", "LOADING") == [
        {"name": "slowinit", "version": "1", "state": "LOADING"}]
    loader.join(60)
    assert states(explicit, "slowinit") == [{"name": "slowinit", "version": "1", "state": "READY"}]


def test_index_shows_unloading_while_requests_drain(explicit: ServerProcess) -> None:
    client = httpclient.InferenceServerClient(explicit.http_url)
    client.load_model("slowexec")
    answers: list = []

    def slow_infer() -> None:
        answers.append(infer(httpclient.InferenceServerClient(explicit.http_url,
                                                              network_timeout=60), "slowexec"))

    request = threading.Thread(target=slow_infer)
    request.start()
    explicit.wait_pending("slowexec", 1)  # the request is in flight
    unloader = threading.Thread(
        target=httpclient.InferenceServerClient(explicit.http_url).unload_model,
        args=("slowexec",))
    unloader.start()
    assert wait_for_state(explicit, "slowexec", "UNLOADING") == [
        {"name": "slowexec", "version": "1", "state": "UNLOADING"}]
    assert not client.is_model_ready("slowexec")  # no new request is taken meanwhile
    request.join(60)
    unloader.join(60)
    assert len(answers) == 1
    np.testing.assert_array_equal(answers[0], [[1.5, 2.5]])
    assert states(explicit, "slowexec")[0]["reason"] == "unloaded"


def test_load_unknown_model_fails_as_triton(explicit: ServerProcess) -> None:
    assert post(explicit, "/v2/repository/models/nothere/load").status_and_text() == (
        500, '{"error":"failed to load \'nothere\', failed to poll from model repository"}')
    grpc = grpcclient.InferenceServerClient(explicit.grpc_url)
    with pytest.raises(InferenceServerException) as info:
        grpc.load_model("nothere")
    assert info.value.status() == "StatusCode.INTERNAL"
    assert "failed to poll from model repository" in info.value.message()


def test_unload_unknown_model_succeeds_as_triton(explicit: ServerProcess) -> None:
    assert post(explicit, "/v2/repository/models/nothere/unload").status_and_text() == (200, "")


def test_load_with_config_override_reloads_the_loaded_model(explicit: ServerProcess) -> None:
    client = httpclient.InferenceServerClient(explicit.http_url)
    client.load_model("reloadme")
    assert client.get_model_config("reloadme")["max_batch_size"] == 8
    config = json.loads(json.dumps(client.get_model_config("reloadme")))
    config["max_batch_size"] = 4
    # Read as protobuf's parser reads it (Triton's JsonStringToMessage): an unquoted key.
    client.load_model("reloadme",
                      config=json.dumps(config).replace('"max_batch_size"', "max_batch_size"))
    assert client.get_model_config("reloadme")["max_batch_size"] == 4
    np.testing.assert_array_equal(infer(client, "reloadme"), [[1.5, 2.5]])
    # A plain load leaves the override serving while the model's folder is unchanged (as
    # Triton 2.51, checked side by side); after an unload, a plain load reads the folder.
    client.load_model("reloadme")
    assert client.get_model_config("reloadme")["max_batch_size"] == 4
    client.unload_model("reloadme")
    client.load_model("reloadme")
    assert client.get_model_config("reloadme")["max_batch_size"] == 8


def test_failed_reload_leaves_the_old_version_serving(explicit: ServerProcess) -> None:
    client = httpclient.InferenceServerClient(explicit.http_url)
    client.load_model("failreload")
    bad = json.dumps({"backend": "no_such_backend", "max_batch_size": 8,
                      "input": [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [-1]}],
                      "output": [{"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [-1]}]})
    with pytest.raises(InferenceServerException) as info:
        client.load_model("failreload", config=bad)
    assert info.value.status() == "400"
    assert info.value.message().startswith(
        "load failed for model 'failreload': version 1 is at UNAVAILABLE state: ")
    assert client.is_model_ready("failreload")
    assert client.get_model_config("failreload")["backend"] == "identity"
    np.testing.assert_array_equal(infer(client, "failreload"), [[1.5, 2.5]])
    assert states(explicit, "failreload")[0]["state"] == "READY"


def test_config_override_with_a_lone_instance_group_object(tmp_path: Path) -> None:
    # Triton's L0_lifecycle test_concurrent_model_instance_load_sanity sends the group itself,
    # not a list of one; Triton takes it.
    write_model(tmp_path, "m", identity_config("m"))
    with ServerProcess([tmp_path], "--model-control-mode=explicit") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        client.load_model("m")
        config = client.get_model_config("m")
        client.load_model("m", config=json.dumps(
            dict(config, instance_group={"kind": "KIND_CPU", "count": 3})))
        groups = client.get_model_config("m")["instance_group"]
        assert [(g["kind"], g["count"]) for g in groups] == [("KIND_CPU", 3)]
        np.testing.assert_array_equal(infer(client, "m"), [[1.5, 2.5]])


def test_bad_config_json_fails_as_triton(explicit: ServerProcess) -> None:
    body = json.dumps({"parameters": {"config": "{bad json"}}).encode()
    assert post(explicit, "/v2/repository/models/ready_b/load", raw=body).status_and_text() == (
        500, '{"error":"failed to load \'ready_b\', failed to poll from model repository"}')
    body = json.dumps({"parameters": {"config": 5}}).encode()
    assert post(explicit, "/v2/repository/models/ready_b/load", raw=body).status_and_text() == (
        500, '{"error":"attempt to access JSON non-string as string"}')
    body = json.dumps({"parameters": {"foo": 1}}).encode()
    assert post(explicit, "/v2/repository/models/ready_b/load", raw=body).status_and_text() == (
        500, '{"error":"attempt to access JSON non-string as string"}')
    body = json.dumps({"parameters": {"unload_dependents": "true"}}).encode()
    assert post(explicit, "/v2/repository/models/ready_b/load", raw=body).status_and_text() == (
        500, '{"error":"unexpected error on creating Triton parameter"}')


@pytest.mark.parametrize("parameters", [{"unload_dependents": "yes"}, {"foo": 1}, [], 5])
def test_unload_ignores_parameters_it_does_not_know_as_triton(explicit: ServerProcess,
                                                               parameters) -> None:
    # Triton 2.51 answers these unloads with an empty 200 and unloads the model.
    client = httpclient.InferenceServerClient(explicit.http_url)
    client.load_model("ready_b")
    body = json.dumps({"parameters": parameters}).encode()
    reply = post(explicit, "/v2/repository/models/ready_b/unload", raw=body)
    assert reply.status_and_text() == (200, "")
    assert not client.is_model_ready("ready_b")


def test_repository_routes_and_methods_answer_as_triton(explicit: ServerProcess) -> None:
    def call(method: str, path: str, body: bytes | None = None) -> tuple[int, str, str]:
        reply = raw_call(explicit, method, path, body)
        return reply.status, reply.headers["content-type"], reply.text

    assert call("GET", "/v2/repository/index") == (
        405, "application/json", '{"error":"Method Not Allowed"}')
    assert call("GET", "/v2/repository/models/ready_a/load") == (
        405, "application/json", '{"error":"Method Not Allowed"}')
    assert call("POST", "/v2/repository/models/ready_a", b"") == (
        404, "text/plain", '{"error":"Not Found"}')
    assert call("POST", "/v2/repository/models/ready_a/reload", b"") == (
        404, "text/plain", '{"error":"Not Found"}')
    assert call("POST", "/v2/repository/models/ready_a/load", b'{"parameters": 5}') == (
        500, "application/json", '{"error":"attempt to get members for non-object"}')
    assert call("POST", "/v2/repository/index", b"[1]")[0] == 200
    assert call("POST", "/v2/repository/models/ready_a/load", b"") == (
        200, "application/json", "")


def test_reload_unloads_versions_the_policy_no_longer_selects(explicit: ServerProcess) -> None:
    client = httpclient.InferenceServerClient(explicit.http_url)
    client.load_model("versions")
    assert [e["state"] for e in states(explicit, "versions")] == ["READY"] * 3
    config = client.get_model_config("versions")
    config["version_policy"] = {"latest": {"num_versions": 1}}
    client.load_model("versions", config=json.dumps(config))
    assert client.is_model_ready("versions", "3")
    assert not client.is_model_ready("versions", "1")
    assert not client.is_model_ready("versions", "2")
    by_version = {e["version"]: e for e in states(explicit, "versions")}
    assert by_version["3"]["state"] == "READY"
    assert by_version["1"]["state"] in ("UNLOADING", "UNAVAILABLE")


def test_files_override_over_http_loads_from_a_private_directory(explicit: ServerProcess) -> None:
    client = httpclient.InferenceServerClient(explicit.http_url)
    client.load_model("newpy", config=PY_CONFIG, files={"file:1/model.py": PLUS1_PY.encode()})
    tensor = httpclient.InferInput("IN", [1], "INT32")
    tensor.set_data_from_numpy(np.array([41], np.int32))
    assert client.infer("newpy", [tensor]).as_numpy("OUT").tolist() == [42]
    client.unload_model("newpy")
    assert not client.is_model_ready("newpy")


def test_files_override_over_grpc_and_aio(explicit: ServerProcess) -> None:
    grpc = grpcclient.InferenceServerClient(explicit.grpc_url)
    grpc.load_model("grpcload", config=PY_CONFIG, files={"file:1/model.py": PLUS1_PY.encode()})
    tensor = grpcclient.InferInput("IN", [1], "INT32")
    tensor.set_data_from_numpy(np.array([1], np.int32))
    assert grpc.infer("grpcload", [tensor]).as_numpy("OUT").tolist() == [2]
    grpc.unload_model("grpcload")
    assert not grpc.is_model_ready("grpcload")

    async def aio() -> tuple[bool, bool]:
        async with aioclient.InferenceServerClient(explicit.grpc_url) as client:
            await client.load_model("aioload", config=PY_CONFIG,
                                    files={"file:1/model.py": PLUS1_PY.encode()})
            loaded = await client.is_model_ready("aioload")
            await client.unload_model("aioload", unload_dependents=True)
            return loaded, await client.is_model_ready("aioload")

    assert asyncio.run(aio()) == (True, False)


def test_load_unload_and_index_over_the_http_aio_client(explicit: ServerProcess) -> None:
    async def scenario() -> tuple[list, bool, bool]:
        client = httpaio.InferenceServerClient(explicit.http_url)
        try:
            await client.load_model("httpaio", config=PY_CONFIG,
                                    files={"file:1/model.py": PLUS1_PY.encode()})
            loaded = await client.is_model_ready("httpaio")
            await client.unload_model("httpaio", unload_dependents=True)
            index = await client.get_model_repository_index()
            return index, loaded, await client.is_model_ready("httpaio")
        finally:
            await client.close()

    index, loaded, after = asyncio.run(scenario())
    assert (loaded, after) == (True, False)
    assert {"name": "ready_a", "version": "1", "state": "READY"} in index


def test_files_override_without_config_is_refused(explicit: ServerProcess) -> None:
    content = base64.b64encode(PLUS1_PY.encode()).decode()
    body = json.dumps({"parameters": {"file:1/model.py": content}}).encode()
    reply = post(explicit, "/v2/repository/models/ready_b/load", raw=body)
    assert reply.status_and_text() == (500, json.dumps({
        "error": "failed to load 'ready_b', failed to poll from model repository: file "
                 "overrides need the 'config' parameter"}, separators=(",", ":")))


def test_load_with_an_invalid_config_fails_as_triton_with_the_reason(
        explicit: ServerProcess) -> None:
    config = json.dumps({"backend": "identity", "max_batch_size": -3})
    body = json.dumps({"parameters": {"config": config}}).encode()
    status, text = post(explicit, "/v2/repository/models/ready_b/load", raw=body).status_and_text()
    assert status == 500
    assert json.loads(text)["error"].startswith(
        "failed to load 'ready_b', failed to poll from model repository: ")
    assert "max_batch_size" in json.loads(text)["error"]


def test_server_metadata_lists_the_repository_extensions(explicit: ServerProcess) -> None:
    extensions = httpclient.InferenceServerClient(explicit.http_url).get_server_metadata()[
        "extensions"]
    assert "model_repository" in extensions
    assert "model_repository(unload_dependents)" in extensions


def test_none_mode_refuses_load_and_unload(tmp_path: Path) -> None:
    write_model(tmp_path, "m", identity_config("m"))
    message = "explicit model load / unload is not allowed if polling is enabled"
    with ServerProcess([tmp_path]) as server:
        assert post(server, "/v2/repository/models/m/load").status_and_text() == (503, json.dumps(
            {"error": message}, separators=(",", ":")))
        assert post(server, "/v2/repository/models/m/unload").status_and_text() == (503, json.dumps(
            {"error": message}, separators=(",", ":")))
        grpc = grpcclient.InferenceServerClient(server.grpc_url)
        with pytest.raises(InferenceServerException) as info:
            grpc.unload_model("m")
        assert info.value.status() == "StatusCode.UNAVAILABLE"
        assert info.value.message() == message
        assert grpc.is_model_ready("m")
        assert grpc.get_model_repository_index().models[0].state == "READY"


@pytest.mark.parametrize("call, parameters, repository, code, message", [
    ("load", {"config": ("int64_param", 5)}, "", "INVALID_ARGUMENT",
     "invalid value type for load parameter 'config', expected string_param."),
    ("load", {"config": ("bytes_param", b"{}")}, "", "INVALID_ARGUMENT",
     "invalid value type for load parameter 'config', expected string_param."),
    ("load", {"file:1/model.py": ("string_param", "x")}, "", "INVALID_ARGUMENT",
     "invalid value type for load parameter 'file:1/model.py', expected bytes_param."),
    ("load", {"foo": ("int64_param", 1)}, "", "INVALID_ARGUMENT",
     "unrecognized load parameter 'foo'."),
    ("load", {}, "elsewhere", "UNIMPLEMENTED",
     "'repository_name' specification is not supported"),
    ("unload", {"unload_dependents": ("string_param", "yes")}, "", "INVALID_ARGUMENT",
     "invalid value type for 'unload_dependents' parameter, expected bool_param."),
    ("unload", {}, "elsewhere", "UNIMPLEMENTED",
     "'repository_name' specification is not supported"),
    ("index", {}, "elsewhere", "UNIMPLEMENTED",
     "'repository_name' specification is not supported"),
])
def test_grpc_repository_parameters_of_the_wrong_kind_are_refused_as_triton(
        explicit: ServerProcess, call, parameters, repository, code, message) -> None:
    # tritonclient always sends the right kinds; other gRPC clients may not (Triton 2.51's words).
    import grpc
    from tritonclient.grpc import service_pb2 as pb
    from tritonclient.grpc import service_pb2_grpc

    kinds = {key: pb.ModelRepositoryParameter(**{kind: value})
             for key, (kind, value) in parameters.items()}
    request = {
        "load": lambda: pb.RepositoryModelLoadRequest(
            repository_name=repository, model_name="never", parameters=kinds),
        "unload": lambda: pb.RepositoryModelUnloadRequest(
            repository_name=repository, model_name="never", parameters=kinds),
        "index": lambda: pb.RepositoryIndexRequest(repository_name=repository),
    }[call]()
    with grpc.insecure_channel(explicit.grpc_url) as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        method = {"load": stub.RepositoryModelLoad, "unload": stub.RepositoryModelUnload,
                  "index": stub.RepositoryIndex}[call]
        with pytest.raises(grpc.RpcError) as info:
            method(request, timeout=30)
    assert (info.value.code().name, info.value.details()) == (code, message)
    assert states(explicit, "never") == [{"name": "never"}]  # nothing was loaded
