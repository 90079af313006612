"""Objects a bucket's writer names so that no local folder can hold them (a name leaving the
repository, a component longer than the file system allows, a file where another object's
folder is, two spellings of one path) are left out of the local copy with a warning; the
server starts, serves the bucket's models and keeps polling. Before, each of them stopped the
start with a Python traceback, and a file object later replaced by a folder of that name was
never localized again."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import tritonclient.http as httpclient

from support import PYTHON_MODELS, onnx_models
from support.s3_storage import KEYS, S3Service, s3_service
from support.server_process import ServerProcess

BUCKET = "tritium-hostile"


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Service]:
    with s3_service() as service:
        yield service


def _put(s3: S3Service, key: str, body: bytes) -> None:
    s3.client.put_object(Bucket=BUCKET, Key=key, Body=body)


def test_unstorable_object_names_are_left_out_and_the_models_served(
        s3: S3Service, tmp_path: Path) -> None:
    s3.client.create_bucket(Bucket=BUCKET)
    source = PYTHON_MODELS / "repo" / "add_sub"
    folder = tmp_path / "models"
    shutil.copytree(source, folder / "add_sub")
    s3.upload(BUCKET, "r", folder)
    hostile = {
        "r/../../escaped": b"outside",
        "r/" + "L" * 300 + "/x": b"too long",
        "r/add_sub/1/model.py/inside_a_file": b"a folder where a file is",
        "r/add_sub//1/model.py": b"raise SystemExit('an alias of model.py won')",
        "r/onnx_add_sub": b"a file, to become a folder",
    }
    for key, body in hostile.items():
        _put(s3, key, body)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    server = ServerProcess([s3.url(BUCKET, "r")], "--model-control-mode=poll",
                           "--repository-poll-secs=1", "--strict-model-config=false",
                           env={**KEYS, "TMPDIR": str(tmp)})
    with server:
        client = httpclient.InferenceServerClient(server.http_url)
        assert client.is_model_ready("add_sub")
        log = server.log()
        assert "ignoring object '../../escaped': its name leaves the model repository" in log
        assert "ignoring object '" + "L" * 300 + "/x': it cannot be stored locally" in log
        assert ("ignoring object 'add_sub/1/model.py/inside_a_file': it cannot be stored "
                "locally") in log
        assert ("ignoring object 'add_sub//1/model.py': another object is stored as "
                "'add_sub/1/model.py'") in log
        assert not any(tmp_path.rglob("escaped"))
        # The file object becomes a model folder of that name: polled in.
        s3.client.delete_object(Bucket=BUCKET, Key="r/onnx_add_sub")
        onnx_models.save(onnx_models.add_sub(), tmp_path / "onnx" / "onnx_add_sub" / "1"
                         / "model.onnx")
        s3.upload(BUCKET, "r", tmp_path / "onnx")
        deadline = time.monotonic() + 60
        while not client.is_model_ready("onnx_add_sub"):
            assert time.monotonic() < deadline, server.log()[-2000:]
            time.sleep(0.2)
        assert client.is_model_ready("add_sub")
        # Each object is warned about once, not at every poll.
        assert server.log().count("ignoring object '../../escaped'") == 1
    assert server.process is not None and server.process.returncode == 0
