"""Model repositories on S3 (`s3://[host:port/]bucket/path`), served by a real `tritium serve`
from moto's S3 HTTP server, as Triton 2.51 serves them from MinIO in its L0_storage_S3_local:
the server lists the bucket, localizes the models' files into a temporary folder (removed at
exit), polls the bucket for new, changed and removed models, loads on request, mixes local
and S3 repositories, and refuses to start when the service refuses its credentials."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient

from support import PYTHON_MODELS, onnx_models
from support.s3_storage import KEYS, S3Service, s3_service
from support.server_process import ServerProcess

# A bucket named with dots, as Triton's QA names its own (demo-bucket1.0).
BUCKET = "tritium.models-1.0"


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Service]:
    with s3_service() as service:
        yield service


def _python_add_sub(folder: Path, name: str = "add_sub", versions: tuple[int, ...] = (1,)
                    ) -> Path:
    """The python backend's add_sub (model.py in each version folder), named `name`."""
    source = PYTHON_MODELS / "repo" / "add_sub"
    config = (source / "config.pbtxt").read_text().replace('"add_sub"', f'"{name}"')
    (folder / name).mkdir(parents=True)
    (folder / name / "config.pbtxt").write_text(config)
    for version in versions:
        shutil.copytree(source / "1", folder / name / str(version))
    return folder


def _onnx_add_sub(folder: Path, name: str = "onnx_add_sub") -> Path:
    """An ONNX add_sub with no config.pbtxt: the server completes its configuration."""
    onnx_models.save(onnx_models.add_sub(), folder / name / "1" / "model.onnx")
    return folder


def _server(*repositories: str | Path, args: tuple[str, ...] = (),
            env: dict[str, str] | None = None) -> ServerProcess:
    return ServerProcess(list(repositories), *args, env={**KEYS, **(env or {})})


def _add_sub(server: ServerProcess, model: str, version: str = "", width: int = 4,
             batch: bool = False) -> np.ndarray:
    a = np.arange(width, dtype=np.float32)
    b = np.full(width, 2.0, dtype=np.float32)
    if batch:
        a, b = a[None], b[None]
    client = httpclient.InferenceServerClient(server.http_url)
    inputs = []
    for name, array in (("INPUT0", a), ("INPUT1", b)):
        tensor = httpclient.InferInput(name, list(array.shape), "FP32")
        tensor.set_data_from_numpy(array)
        inputs.append(tensor)
    result = client.infer(model, inputs, model_version=version)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)
    return result.as_numpy("OUTPUT0")


def _wait(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the server never got there"
        time.sleep(0.2)


def _copies(tmp: Path) -> list[Path]:
    return sorted(tmp.glob("tritium-cloud-*"))


def test_serves_python_and_onnx_models_from_a_bucket_and_removes_the_copy_at_exit(
        s3: S3Service, tmp_path: Path) -> None:
    folder = _onnx_add_sub(_python_add_sub(tmp_path / "models"))
    s3.upload(BUCKET, "serve/models", folder)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    # A path written with extra slashes is the same repository, as in Triton.
    url = f"s3://{s3.host_port}//{BUCKET}/serve//models/"
    server = _server(url, args=("--strict-model-config=false",), env={"TMPDIR": str(tmp)})
    with server:
        np.testing.assert_array_equal(_add_sub(server, "add_sub"), [2, 3, 4, 5])
        np.testing.assert_array_equal(_add_sub(server, "onnx_add_sub", batch=True),
                                      [[2, 3, 4, 5]])
        index = httpclient.InferenceServerClient(server.http_url).get_model_repository_index()
        assert {m["name"] for m in index} == {"add_sub", "onnx_add_sub"}
        copies = _copies(tmp)
        assert len(copies) == 1 and (copies[0] / "add_sub" / "1" / "model.py").is_file()
    assert server.process is not None and server.process.returncode == 0
    assert _copies(tmp) == []


def test_explicit_mode_loads_and_unloads_on_request(s3: S3Service, tmp_path: Path) -> None:
    s3.upload(BUCKET, "explicit", _python_add_sub(tmp_path / "models"))
    # Triton's variable for where S3 repositories are localized (made if missing).
    mount = tmp_path / "mount" / "s3"
    with _server(s3.url(BUCKET, "explicit"), args=("--model-control-mode=explicit",),
                 env={"TRITON_AWS_MOUNT_DIRECTORY": str(mount)}) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert not client.is_model_ready("add_sub")
        client.load_model("add_sub")
        np.testing.assert_array_equal(_add_sub(server, "add_sub"), [2, 3, 4, 5])
        assert (_copies(mount)[0] / "add_sub" / "1" / "model.py").is_file()
        client.unload_model("add_sub")
        _wait(lambda: not client.is_model_ready("add_sub"))
    assert _copies(mount) == []


def test_poll_mode_follows_the_bucket(s3: S3Service, tmp_path: Path) -> None:
    s3.upload(BUCKET, "poll", _python_add_sub(tmp_path / "v1"))
    with _server(s3.url(BUCKET, "poll"),
                 args=("--model-control-mode=poll", "--repository-poll-secs=1")) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.is_model_ready("add_sub", "1")
        # A new version: the latest (the default policy) replaces version 1.
        (tmp_path / "v2").mkdir()
        shutil.copytree(PYTHON_MODELS / "repo" / "add_sub" / "1", tmp_path / "v2" / "2")
        s3.upload(BUCKET, "poll/add_sub", tmp_path / "v2")
        _wait(lambda: client.is_model_ready("add_sub", "2"))
        np.testing.assert_array_equal(_add_sub(server, "add_sub", "2"), [2, 3, 4, 5])
        _wait(lambda: not client.is_model_ready("add_sub", "1"))
        # A new model, then its removal.
        s3.upload(BUCKET, "poll", _onnx_add_sub(tmp_path / "new"))
        _wait(lambda: client.is_model_ready("onnx_add_sub"))
        np.testing.assert_array_equal(_add_sub(server, "onnx_add_sub", batch=True),
                                      [[2, 3, 4, 5]])
        s3.delete(BUCKET, "poll/onnx_add_sub")
        _wait(lambda: not client.is_model_ready("onnx_add_sub"))
        assert client.is_model_ready("add_sub", "2")


def test_a_local_and_an_s3_repository_together(s3: S3Service, tmp_path: Path) -> None:
    s3.upload(BUCKET, "mixed", _python_add_sub(tmp_path / "remote", name="remote_add_sub"))
    local = _onnx_add_sub(tmp_path / "local", name="local_add_sub")
    with _server(local, s3.url(BUCKET, "mixed")) as server:
        np.testing.assert_array_equal(_add_sub(server, "remote_add_sub"), [2, 3, 4, 5])
        np.testing.assert_array_equal(_add_sub(server, "local_add_sub", batch=True),
                                      [[2, 3, 4, 5]])


def _refused_start(server: ServerProcess) -> str:
    server.start(wait_ready=False)
    assert server.wait_exit(120) != 0
    return server.log()


def test_refused_credentials_stop_the_start_with_tritons_message(
        s3: S3Service, tmp_path: Path) -> None:
    s3.upload(BUCKET, "refused", _python_add_sub(tmp_path / "models"))
    with s3.refusing_unknown_keys():
        log = _refused_start(_server(s3.url(BUCKET, "refused"),
                                     env={"AWS_SECRET_ACCESS_KEY": "[Invalid]"}))
    assert ("Unable to create S3 filesystem client. Check account credentials. "
            "Exception: '") in log, log


def test_a_credential_file_without_an_entry_for_the_path_is_refused(
        s3: S3Service, tmp_path: Path) -> None:
    credentials = tmp_path / "credentials.json"
    credentials.write_text('{"s3": {"s3://elsewhere": {"key_id": "k", "secret_key": "s"}}}')
    url = s3.url(BUCKET, "nowhere")
    log = _refused_start(_server(url, env={"TRITON_CLOUD_CREDENTIAL_PATH": str(credentials)}))
    assert f"Cannot match credential for path  {url}" in log, log


@pytest.mark.parametrize("document", ['{"s3": ["s3://"]}', '{"s3": "s3://"}', "[1, 2]"])
def test_a_malformed_credential_file_stops_the_start_in_one_line(
        s3: S3Service, tmp_path: Path, document: str) -> None:
    credentials = tmp_path / "credentials.json"
    credentials.write_text(document)
    log = _refused_start(_server(s3.url(BUCKET, "any"),
                                 env={"TRITON_CLOUD_CREDENTIAL_PATH": str(credentials)}))
    assert "Traceback" not in log, log
    if document.startswith("["):  # no section at all: no credential for the path
        assert "Cannot match credential for path" in log, log
    else:
        assert (f"failed to parse the cloud credential file {credentials}: its \"s3\" entry "
                "must map path prefixes to credentials") in log, log


def test_a_credential_file_entry_signs_for_its_paths(s3: S3Service, tmp_path: Path) -> None:
    s3.upload(BUCKET, "credfile", _python_add_sub(tmp_path / "models"))
    credentials = tmp_path / "credentials.json"
    credentials.write_text(
        '{"s3": {"": {"key_id": "wrong", "secret_key": "wrong"}, '
        f'"s3://{s3.host_port}/{BUCKET}": {{"key_id": "{KEYS["AWS_ACCESS_KEY_ID"]}", '
        f'"secret_key": "{KEYS["AWS_SECRET_ACCESS_KEY"]}"}}}}}}')
    env = {"TRITON_CLOUD_CREDENTIAL_PATH": str(credentials), "AWS_SECRET_ACCESS_KEY": "[Invalid]"}
    with _server(s3.url(BUCKET, "credfile"), env=env) as server:
        np.testing.assert_array_equal(_add_sub(server, "add_sub"), [2, 3, 4, 5])


# A boto3 that cannot be imported: the server of a user who did not install the `s3` extra.
NO_BOTO3 = "raise ImportError('No module named boto3')\n"


def test_without_the_s3_extra(s3: S3Service, tmp_path: Path) -> None:
    shim = tmp_path / "shim"
    (shim / "boto3").mkdir(parents=True)
    (shim / "boto3" / "__init__.py").write_text(NO_BOTO3)
    from support import ROOT

    env = {"PYTHONPATH": f"{shim}:{ROOT / 'src'}"}
    log = _refused_start(_server(s3.url(BUCKET, "any"), env=env))
    assert "s3:// file-system not supported: install Tritium's 's3' extra " \
           "(pip install 'tritium[s3]')" in log, log
    # A local repository never needs it.
    local = _onnx_add_sub(tmp_path / "local")
    with _server(local, env=env) as server:
        np.testing.assert_array_equal(_add_sub(server, "onnx_add_sub", batch=True),
                                      [[2, 3, 4, 5]])
