"""Load and unload requests never reach outside the model repository or the private override
directory: a model name or an override file path with `..`, an absolute path or a symlink
pointing out is refused with INVALID_ARG, and nothing is read or written outside."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from support.models import identity_config, write_model
from support.raw_http import post
from support.server_process import ServerProcess

CONFIG = json.dumps({
    "backend": "identity",
    "max_batch_size": 8,
    "input": [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [-1]}],
    "output": [{"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [-1]}],
})


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("safety")
    repo = root / "repo"
    write_model(repo, "inside", identity_config("inside"))
    # A loadable model outside the repository, reachable by `..` or by a symlink.
    write_model(root, "outside", identity_config("outside"))
    os.symlink(root / "outside", repo / "linked")
    (root / "tmp").mkdir()
    return {"root": root, "repo": repo, "tmp": root / "tmp"}


@pytest.fixture(scope="module")
def server(layout: dict[str, Path]):
    # The server's own temporary directory, so that what it creates there can be counted.
    with ServerProcess([layout["repo"]], "--model-control-mode=explicit",
                       env={"TMPDIR": str(layout["tmp"])}) as process:
        yield process


def loaded(server: ServerProcess) -> set[str]:
    client = grpcclient.InferenceServerClient(server.grpc_url)
    return {m.name for m in client.get_model_repository_index().models if m.state == "READY"}


def test_model_name_with_dot_dot_is_refused(server: ServerProcess) -> None:
    reply = post(server, "/v2/repository/models/..%2Foutside/load")
    assert (reply.status, reply.json()) == (400, {"error": "invalid model name '../outside'"})
    reply = post(server, "/v2/repository/models/..%2Foutside/unload")
    assert reply.status == 400 and isinstance(reply.json(), dict)
    reply = post(server, "/v2/repository/models/../load")
    assert reply.status == 400 and reply.error == "invalid model name '..'"
    assert "outside" not in loaded(server)


def test_absolute_model_name_is_refused(server: ServerProcess, layout: dict[str, Path]) -> None:
    client = grpcclient.InferenceServerClient(server.grpc_url)
    with pytest.raises(InferenceServerException) as info:
        client.load_model(str(layout["root"] / "outside"))
    assert info.value.status() == "StatusCode.INVALID_ARGUMENT"
    assert "invalid model name" in info.value.message()
    assert not any("outside" in name for name in loaded(server))


def test_model_directory_symlinked_out_of_the_repository_is_refused(server: ServerProcess) -> None:
    reply = post(server, "/v2/repository/models/linked/load")
    assert reply.status == 400
    assert reply.error == (
        "invalid model name 'linked': the model directory leaves the model repository")
    assert "linked" not in loaded(server)
    # The repository's own models still load.
    assert post(server, "/v2/repository/models/inside/load").status == 200


@pytest.mark.parametrize("key", [
    "file:../1/model.py",
    "file:1/../../escape.txt",
    "file:../../../escape.txt",
])
def test_override_file_path_with_dot_dot_is_refused(server: ServerProcess, key: str,
                                                   layout: dict[str, Path]) -> None:
    content = base64.b64encode(b"escaped").decode()
    reply = post(server, "/v2/repository/models/fresh/load",
                 {"parameters": {"config": CONFIG, key: content}})
    assert reply.status == 400
    assert reply.error == (
        f"failed to load 'fresh', invalid file override '{key}': the path must stay inside the "
        "model directory")
    # Nothing was written: no temporary directory left, no escaped file anywhere near.
    assert os.listdir(layout["tmp"]) == []
    assert not list(layout["root"].rglob("escape.txt"))
    assert "fresh" not in loaded(server)


def test_an_absolute_override_file_path_stays_in_the_override_directory(
        server: ServerProcess, tmp_path: Path) -> None:
    """As Triton joins it to its override directory: `file:/1/x` is `1/x` there, and
    `file:<elsewhere>/1/model.py` is no version folder of the model (Triton 2.51's answer)."""
    target = tmp_path / "1" / "model.py"
    grpc = grpcclient.InferenceServerClient(server.grpc_url)
    with pytest.raises(InferenceServerException) as info:
        grpc.load_model("fresh", config=CONFIG, files={f"file:{target}": b"escaped"})
    assert info.value.status() == "StatusCode.INVALID_ARGUMENT"
    assert info.value.message() == (
        "load failed for model 'fresh': at least one version must be available under the "
        "version policy of model 'fresh'\n")
    assert not target.exists()
    grpc.load_model("fresh", config=CONFIG, files={"file:/1/weights.bin": b"\x00"})
    assert grpc.is_model_ready("fresh")
    grpc.unload_model("fresh")


def test_override_directory_is_removed_when_the_model_is_unloaded(
        server: ServerProcess, layout: dict[str, Path]) -> None:
    grpc = grpcclient.InferenceServerClient(server.grpc_url)
    grpc.load_model("fresh", config=CONFIG, files={"file:1/weights.bin": b"\x00\x01"})
    created = [d for d in os.listdir(layout["tmp"]) if d.startswith("tritium-model-")]
    assert len(created) == 1
    directory = layout["tmp"] / created[0]
    assert (directory / "fresh" / "1" / "weights.bin").read_bytes() == b"\x00\x01"
    assert oct(directory.stat().st_mode & 0o777) == "0o700"
    grpc.unload_model("fresh")
    assert not directory.exists()


@pytest.mark.parametrize("count", [1025, 2**31 - 1])
def test_a_load_asking_for_too_many_instances_is_refused(server: ServerProcess,
                                                         count: int) -> None:
    """Two billion instances made the server list them all first (18 GB, then the kernel
    killed it); a million ran it out of threads after 26 s with an internal error."""
    config = json.loads(CONFIG)
    config["instance_group"] = [{"kind": "KIND_CPU", "count": count}]
    reply = post(server, "/v2/repository/models/inside/load",
                 {"parameters": {"config": json.dumps(config)}})
    assert reply.status == 400
    assert (f"instance groups of model inside ask for {count} instances; at most 1024 "
            "instances per model are supported") in reply.error
    reply = post(server, "/v2/repository/models/inside/load", {"parameters": {"config": CONFIG}})
    assert reply.status == 200
    assert "inside" in loaded(server)
