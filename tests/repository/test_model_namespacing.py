"""`--model-namespacing=true`: each model repository is a namespace, so models of one name in
two repositories both load (Triton's L0_model_namespacing, its four scenarios, in POLL and
EXPLICIT mode). An ensemble runs the composing model of its own repository, else the only one of
that name; a request for a name that several models answer to is refused as ambiguous; the
metrics label each model with its namespace.

Composing models here are python models answering a constant: which repository's model ran is
then the answer itself.
"""

from __future__ import annotations

import shutil
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.models import write_model
from support.server_process import ServerProcess

MODES = {
    "poll": ("--model-control-mode=poll", "--repository-poll-secs=0.3"),
    "explicit": ("--model-control-mode=explicit",),
}
# What the composing models of the first and the second repository answer.
FIRST, SECOND = 1, 2

TAG_PY = """
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "OUT", np.array([{tag}], np.int32))]) for r in requests]
"""

IO = """
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
"""


def tag_model(repo: Path, name: str, tag: int) -> None:
    write_model(repo, name, f'name: "{name}"\nbackend: "python"\n{IO}',
                files={"1/model.py": TAG_PY.format(tag=tag)})


def ensemble(repo: Path, name: str, step: str) -> None:
    write_model(repo, name, f'name: "{name}"\nplatform: "ensemble"\n{IO}'
                f'ensemble_scheduling {{ step [ {{ model_name: "{step}" model_version: -1 '
                'input_map { key: "IN" value: "IN" } output_map { key: "OUT" value: "OUT" } '
                "} ] }\n")


def answer(client: httpclient.InferenceServerClient, model: str) -> int:
    tensor = httpclient.InferInput("IN", [1], "INT32")
    tensor.set_data_from_numpy(np.array([0], np.int32))
    return int(client.infer(model, [tensor]).as_numpy("OUT")[0])


def assert_ambiguous(client: httpclient.InferenceServerClient, model: str) -> None:
    with pytest.raises(InferenceServerException) as caught:
        answer(client, model)
    assert caught.value.status() == "400"
    assert "model namespace must be provided to resolve ambiguity" in caught.value.message()
    assert not client.is_model_ready(model)


def wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return True
        except InferenceServerException:
            pass  # a reload in progress
        time.sleep(0.1)
    return condition()


@contextmanager
def serving(repos: list[Path], mode: str) -> Iterator[httpclient.InferenceServerClient]:
    with ServerProcess(repos, "--model-namespacing=true", *MODES[mode]) as server:
        yield httpclient.InferenceServerClient(server.http_url)


def two_repositories(tmp_path: Path) -> tuple[Path, Path]:
    first, second = tmp_path / "addsub_repo", tmp_path / "subadd_repo"
    first.mkdir()
    second.mkdir()
    return first, second


def duplicated_composing_model(tmp_path: Path) -> tuple[Path, Path]:
    """Each repository: an ensemble over `composing_model`, which both hold."""
    first, second = two_repositories(tmp_path)
    ensemble(first, "simple_addsub", "composing_model")
    tag_model(first, "composing_model", FIRST)
    ensemble(second, "simple_subadd", "composing_model")
    tag_model(second, "composing_model", SECOND)
    return first, second


@pytest.mark.parametrize("mode", MODES)
def test_no_duplication(tmp_path: Path, mode: str) -> None:
    first, second = two_repositories(tmp_path)
    ensemble(first, "simple_addsub", "composing_addsub")
    tag_model(first, "composing_addsub", FIRST)
    ensemble(second, "simple_subadd", "composing_subadd")
    tag_model(second, "composing_subadd", SECOND)
    with serving([first, second], mode) as client:
        if mode == "explicit":
            client.load_model("simple_addsub")
            client.load_model("simple_subadd")
        assert answer(client, "simple_addsub") == answer(client, "composing_addsub") == FIRST
        assert answer(client, "simple_subadd") == answer(client, "composing_subadd") == SECOND


@pytest.mark.parametrize("mode", MODES)
def test_duplication(tmp_path: Path, mode: str) -> None:
    with serving(list(duplicated_composing_model(tmp_path)), mode) as client:
        assert client.is_server_ready()
        if mode == "explicit":
            client.load_model("simple_addsub")
            client.load_model("simple_subadd")
        assert answer(client, "simple_addsub") == FIRST
        assert answer(client, "simple_subadd") == SECOND
        assert_ambiguous(client, "composing_model")
        # The index lists both, without their namespaces, as Triton's does.
        entries = [e for e in client.get_model_repository_index()
                   if e["name"] == "composing_model"]
        assert [e["state"] for e in entries] == ["READY", "READY"]


@pytest.mark.parametrize("mode", MODES)
def test_ensemble_duplication(tmp_path: Path, mode: str) -> None:
    first, second = two_repositories(tmp_path)
    ensemble(first, "simple_ensemble", "composing_addsub")
    tag_model(first, "composing_addsub", FIRST)
    ensemble(second, "simple_ensemble", "composing_subadd")
    tag_model(second, "composing_subadd", SECOND)
    with serving([first, second], mode) as client:
        if mode == "explicit":
            client.load_model("simple_ensemble")  # both, with their composing models
        assert answer(client, "composing_addsub") == FIRST
        assert answer(client, "composing_subadd") == SECOND
        assert_ambiguous(client, "simple_ensemble")


@pytest.mark.parametrize("mode", MODES)
def test_dynamic_resolution(tmp_path: Path, mode: str) -> None:
    """Without its own `composing_model` the first ensemble runs the second repository's; with
    it back, its own again."""
    first, second = duplicated_composing_model(tmp_path)
    with serving([first, second], mode) as client:
        shutil.move(first / "composing_model", tmp_path / "composing_model")
        if mode == "explicit":
            client.load_model("simple_addsub")
            client.load_model("simple_subadd")
        assert wait_for(lambda: answer(client, "simple_addsub") == SECOND)
        assert answer(client, "simple_subadd") == answer(client, "composing_model") == SECOND

        shutil.move(tmp_path / "composing_model", first / "composing_model")
        if mode == "explicit":
            client.load_model("simple_addsub")  # loads the composing model that came back
        assert wait_for(lambda: answer(client, "simple_addsub") == FIRST)
        assert answer(client, "simple_subadd") == SECOND
        assert_ambiguous(client, "composing_model")


def test_unload_request_unloads_every_model_of_the_name(tmp_path: Path) -> None:
    with serving(list(duplicated_composing_model(tmp_path)), "explicit") as client:
        client.load_model("composing_model")  # both repositories'
        assert_ambiguous(client, "composing_model")
        client.unload_model("composing_model")
        with pytest.raises(InferenceServerException, match="'composing_model' is not found"):
            answer(client, "composing_model")


def test_metrics_label_models_with_their_namespace(tmp_path: Path) -> None:
    first, second = duplicated_composing_model(tmp_path)
    with ServerProcess([first, second], "--model-namespacing=true") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        answer(client, "simple_addsub")
        with urllib.request.urlopen(server.metrics_url, timeout=10) as response:
            text = response.read().decode()
    success = [line for line in text.splitlines()
               if line.startswith('nv_inference_request_success{model="composing_model"')]
    assert sorted(success) == [
        f'nv_inference_request_success{{model="composing_model",namespace="{first}",'
        'version="1"} 1',
        f'nv_inference_request_success{{model="composing_model",namespace="{second}",'
        'version="1"} 0',
    ]


def test_without_namespacing_a_duplicated_name_stays_refused(tmp_path: Path) -> None:
    first, second = duplicated_composing_model(tmp_path)
    tag_model(first, "unique", FIRST)
    with ServerProcess([first, second], "--model-control-mode=explicit") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        with pytest.raises(InferenceServerException, match="failed to poll from model"):
            client.load_model("composing_model")
        client.load_model("unique")
        assert answer(client, "unique") == FIRST
        with urllib.request.urlopen(server.metrics_url, timeout=10) as response:
            text = response.read().decode()
    assert 'nv_inference_request_success{model="unique",version="1"} 1' in text.splitlines()
    assert 'namespace="' not in text


def test_a_name_spelling_an_identifier_reaches_no_model(tmp_path: Path) -> None:
    """'<repository>::<model>' is the server's own key for a model, not a name a client may
    use: it is unknown whether or not the repository exists (over gRPC, where a name may hold
    the repository path's slashes)."""
    first, second = duplicated_composing_model(tmp_path)
    with ServerProcess([first, second], "--model-namespacing=true") as server:
        client = grpcclient.InferenceServerClient(server.grpc_url)
        tensor = grpcclient.InferInput("IN", [1], "INT32")
        tensor.set_data_from_numpy(np.array([0], np.int32))
        assert client.infer("simple_addsub", [tensor]).as_numpy("OUT")[0] == FIRST
        for name in (f"{first}::composing_model", f"{tmp_path / 'nowhere'}::composing_model"):
            with pytest.raises(InferenceServerException) as caught:
                client.infer(name, [tensor])
            assert caught.value.status() == "StatusCode.NOT_FOUND"
            assert caught.value.message() == f"Request for unknown model: '{name}' is not found"
            assert not client.is_model_ready(name)
