"""Custom batching strategies (Triton's TRITONBACKEND_ModelBatch* libraries), through a real
server: a strategy compiled while the tests run (tests/support/native_backends/
byte_cap_strategy.cc: a batch takes requests while their input bytes stay within the model's
MAX_BATCH_BYTES) decides the batches the dynamic batcher sends, whatever the model's backend.

Every model here gets six concurrent requests of 8 input bytes each; Triton's testing hook
TRITONSERVER_DELAY_SCHEDULER=6 holds the first batch until all six are queued, so the batches
are the strategy's alone, and the statistics' batch sizes show them.
"""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.models import identity_config, write_model
from support.native_fixtures import compile_backends
from support.raw_http import post
from support.server_process import ServerProcess

REQUESTS = 6  # each with one FP32 [1, 2] input: 8 bytes


def _cap(max_bytes: int) -> str:
    return (f'parameters {{ key: "MAX_BATCH_BYTES" value: {{ string_value: "{max_bytes}" }} }}\n'
            'dynamic_batching { }\ninstance_group [ { kind: KIND_CPU count: 1 } ]\n')


def _path_parameter(path: Path | str) -> str:
    return ('parameters { key: "TRITON_BATCH_STRATEGY_PATH" '
            f'value: {{ string_value: "{path}" }} }}\n')


def _native_identity(name: str, extra: str) -> str:
    return identity_config(name, extra=extra).replace('backend: "identity"',
                                                      'backend: "native_identity"')


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("custom_batching")
    backends = compile_backends(base / "backends", {"native_identity": "identity"})
    strategies = compile_backends(base / "strategies", {"byte_cap": "byte_cap_strategy",
                                                        "partial": "partial_strategy"},
                                  filename="batchstrategy.so")
    return {"base": base, "backends": backends,
            "byte_cap": strategies / "byte_cap" / "batchstrategy.so",
            "partial": strategies / "partial" / "batchstrategy.so"}


@pytest.fixture(scope="module")
def server(built: dict[str, Path]):
    repo = built["base"] / "models"
    byte_cap = built["byte_cap"]
    # The three places Triton looks for batchstrategy.so, and the parameter.
    write_model(repo, "in_version", identity_config("in_version", extra=_cap(16)))
    shutil.copy(byte_cap, repo / "in_version" / "1" / "batchstrategy.so")
    write_model(repo, "in_model", identity_config("in_model", extra=_cap(24)))
    shutil.copy(byte_cap, repo / "in_model" / "batchstrategy.so")
    # Named by the parameter, relative to the model's folder.
    write_model(repo, "by_parameter",
                identity_config("by_parameter", extra=_cap(32) + _path_parameter("lib/cap.so")))
    (repo / "by_parameter" / "lib").mkdir()
    shutil.copy(byte_cap, repo / "by_parameter" / "lib" / "cap.so")
    # A compiled backend's model, the library in the backend's own folder.
    shutil.copy(byte_cap, built["backends"] / "native_identity" / "batchstrategy.so")
    write_model(repo, "in_backend", _native_identity("in_backend", _cap(16)))
    # Smaller than any one request: each runs alone.
    write_model(repo, "below_one", identity_config("below_one", extra=_cap(4)))
    shutil.copy(byte_cap, repo / "below_one" / "batchstrategy.so")
    # No strategy anywhere: the six requests make one batch.
    write_model(repo, "plain", identity_config("plain", extra=_cap(16)))
    with ServerProcess([repo], f"--backend-directory={built['backends']}",
                       env={"TRITONSERVER_DELAY_SCHEDULER": str(REQUESTS)}) as process:
        yield process


def _batch_sizes(server: ServerProcess, model: str) -> dict[int, int]:
    """{batch size: executions} after six concurrent requests, each answered with its input."""
    def one(index: int) -> None:
        with httpclient.InferenceServerClient(server.http_url) as client:
            data = np.full((1, 2), index, np.float32)
            tensor = httpclient.InferInput("INPUT0", [1, 2], "FP32")
            tensor.set_data_from_numpy(data)
            result = client.infer(model, [tensor])
            np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)

    with ThreadPoolExecutor(REQUESTS) as pool:
        list(pool.map(one, range(REQUESTS)))
    with httpclient.InferenceServerClient(server.http_url) as client:
        stats = client.get_inference_statistics(model)["model_stats"][0]
    return {entry["batch_size"]: entry["compute_infer"]["count"]
            for entry in stats["batch_stats"]}


@pytest.mark.parametrize(("model", "sizes"), [
    ("in_version", {2: 3}),
    ("in_model", {3: 2}),
    ("by_parameter", {4: 1, 2: 1}),
    ("in_backend", {2: 3}),
    ("plain", {6: 1}),
])
def test_the_strategy_decides_the_batches(server, model, sizes):
    assert _batch_sizes(server, model) == sizes


def test_a_strategy_path_relative_to_the_working_directory(built):
    """Triton reads a relative TRITON_BATCH_STRATEGY_PATH from the server's working directory
    (Triton's L0_batch_custom names `models/<model>/lib.so`); it must still lie in the model's
    folder or a backend directory."""
    repo = built["base"] / "cwd_models"
    write_model(repo, "by_cwd", identity_config(
        "by_cwd", extra=_cap(32) + _path_parameter("cwd_models/by_cwd/lib/cap.so")))
    (repo / "by_cwd" / "lib").mkdir()
    shutil.copy(built["byte_cap"], repo / "by_cwd" / "lib" / "cap.so")
    with ServerProcess([repo], cwd=built["base"],
                       env={"TRITONSERVER_DELAY_SCHEDULER": str(REQUESTS)}) as process:
        assert _batch_sizes(process, "by_cwd") == {4: 1, 2: 1}


def test_a_request_the_strategy_refuses_to_start_a_batch_with_runs_alone(server):
    assert _batch_sizes(server, "below_one") == {1: REQUESTS}


def test_each_load_logs_the_library_it_found(server, built):
    repo = built["base"] / "models"
    lines = [m for m in server.log_messages() if "custom batching strategy" in m]
    assert sorted(lines) == sorted(
        f"Loading custom batching strategy library {path} for model {model}" for model, path in [
            ("in_version", repo / "in_version" / "1" / "batchstrategy.so"),
            ("in_model", repo / "in_model" / "batchstrategy.so"),
            ("by_parameter", repo / "by_parameter" / "lib" / "cap.so"),
            ("in_backend", built["backends"] / "native_identity" / "batchstrategy.so"),
            ("below_one", repo / "below_one" / "batchstrategy.so"),
        ])


@pytest.fixture
def control(built: dict[str, Path], tmp_path: Path):
    """A server with an empty start, whose models the test writes and loads."""
    repo = tmp_path / "models"
    repo.mkdir()
    with ServerProcess([repo], "--model-control-mode=explicit") as process:
        yield repo, process


def _load_error(server: ServerProcess, model: str) -> str:
    with httpclient.InferenceServerClient(server.http_url) as client:
        with pytest.raises(InferenceServerException) as raised:
            client.load_model(model)
        assert client.is_server_live()
        assert not client.is_model_ready(model)
    return raised.value.message()


def test_an_error_from_model_batcher_initialize_fails_the_load(control, built):
    repo, server = control
    refused = 'parameters { key: "refuse_model" value: { string_value: "yes" } }\n'
    write_model(repo, "refused", identity_config("refused", extra=_cap(16) + refused))
    shutil.copy(built["byte_cap"], repo / "refused" / "batchstrategy.so")
    assert "byte cap strategy refuses model refused" in _load_error(server, "refused")
    # The strategy's own code, as Triton's log has it.
    server.wait_log("failed to load 'refused' version 1: Not found: byte cap strategy refuses "
                    "model refused")


def test_a_library_with_only_some_strategy_functions_fails_the_load(control, built):
    repo, server = control
    write_model(repo, "partial", identity_config("partial", extra=_cap(16)))
    shutil.copy(built["partial"], repo / "partial" / "batchstrategy.so")
    assert (f"{repo / 'partial' / 'batchstrategy.so'} does not define all "
            "required custom batching functions for model partial") in _load_error(
                server, "partial")


def test_a_missing_strategy_path_fails_the_load(control):
    repo, server = control
    missing = repo / "missing" / "nowhere.so"
    write_model(repo, "missing",
                identity_config("missing", extra=_cap(16) + _path_parameter(missing)))
    assert f"Batching library path not found: {missing}" in _load_error(
        server, "missing")


def test_a_strategy_path_with_the_sequence_batcher_fails_the_load(control):
    repo, server = control
    write_model(repo, "sequence", identity_config(
        "sequence", extra="sequence_batching { }\n" + _path_parameter("batchstrategy.so")))
    assert ("TRITON_BATCH_STRATEGY_PATH cannot be specified with sequence "
            "batcher, using default batching strategy") in _load_error(server, "sequence")


def test_the_batcher_is_finalized_when_the_model_unloads(control, built):
    repo, server = control
    write_model(repo, "unloaded", identity_config("unloaded", extra=_cap(16)))
    shutil.copy(built["byte_cap"], repo / "unloaded" / "batchstrategy.so")
    with httpclient.InferenceServerClient(server.http_url) as client:
        client.load_model("unloaded")
        assert client.is_model_ready("unloaded")
        assert "byte cap strategy finalized for model unloaded" not in server.log_messages()
        client.unload_model("unloaded")
    server.wait_log("byte cap strategy finalized for model unloaded")


@pytest.mark.parametrize("where", ["system", "elsewhere", "climbing"])
def test_a_strategy_path_out_of_the_model_and_backends_fails_the_load(control, built, where):
    """A load request's `config` may not make the server open a library from anywhere on the
    machine (before: a system library was opened and the model loaded; a path that did not
    exist, or was no library, told the client so)."""
    repo, server = control
    elsewhere = built["base"] / "elsewhere.so"
    shutil.copy(built["byte_cap"], elsewhere)
    path = {"system": "/usr/lib/x86_64-linux-gnu/libz.so.1",
            "elsewhere": str(elsewhere),
            "climbing": "../../elsewhere.so"}[where]
    write_model(repo, "outside", identity_config("outside", extra=_cap(16)))
    config = {"backend": "identity", "max_batch_size": 8, "dynamic_batching": {},
              "input": [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [-1]}],
              "output": [{"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [-1]}],
              "parameters": {"TRITON_BATCH_STRATEGY_PATH": {"string_value": path}}}
    reply = post(server, "/v2/repository/models/outside/load",
                 {"parameters": {"config": json.dumps(config)}})
    assert reply.status == 400
    assert (f"model 'outside': parameters['TRITON_BATCH_STRATEGY_PATH'] '{path}' is not "
            "allowed; it must be a path inside the model's folder or a backend directory"
            ) in reply.error
    assert "custom batching strategy" not in server.log()
