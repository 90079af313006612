"""Model repositories on Google Cloud Storage (`gs://bucket/path`), served by a real `tritium
serve` from gcp-storage-emulator's GCS server: listed, localized, polled, and refused with
Triton's message when the credentials cannot make a client. (test_cloud_s3.py covers what
all schemes share: explicit loads, mixed repositories, the copy's removal.)"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient

from support import PYTHON_MODELS
from support.gcs_storage import GcsService, gcs_service
from support.server_process import ServerProcess

BUCKET = "tritium-models"


@pytest.fixture(scope="module")
def gcs() -> Iterator[GcsService]:
    with gcs_service() as service:
        yield service


def _repository(folder: Path) -> Path:
    shutil.copytree(PYTHON_MODELS / "repo" / "add_sub", folder / "add_sub")
    return folder


def _infer(server: ServerProcess, version: str = "") -> np.ndarray:
    client = httpclient.InferenceServerClient(server.http_url)
    inputs = []
    for name in ("INPUT0", "INPUT1"):
        tensor = httpclient.InferInput(name, [4], "FP32")
        tensor.set_data_from_numpy(np.arange(4, dtype=np.float32))
        inputs.append(tensor)
    return client.infer("add_sub", inputs, model_version=version).as_numpy("OUTPUT0")


def test_serves_and_polls_a_gcs_repository(gcs: GcsService, tmp_path: Path) -> None:
    gcs.upload(BUCKET, "models", _repository(tmp_path / "models"))
    env = {"STORAGE_EMULATOR_HOST": gcs.endpoint}
    with ServerProcess([f"gs://{BUCKET}/models"], "--model-control-mode=poll",
                       "--repository-poll-secs=1", env=env) as server:
        np.testing.assert_array_equal(_infer(server), [0, 2, 4, 6])
        (tmp_path / "v2").mkdir()
        shutil.copytree(PYTHON_MODELS / "repo" / "add_sub" / "1", tmp_path / "v2" / "2")
        gcs.upload(BUCKET, "models/add_sub", tmp_path / "v2")
        client = httpclient.InferenceServerClient(server.http_url)
        deadline = time.monotonic() + 60
        while not client.is_model_ready("add_sub", "2"):
            assert time.monotonic() < deadline, "version 2 never loaded"
            time.sleep(0.2)
        np.testing.assert_array_equal(_infer(server, "2"), [0, 2, 4, 6])


def test_unusable_credentials_stop_the_start_with_tritons_message(
        gcs: GcsService, tmp_path: Path) -> None:
    key_file = tmp_path / "key.json"
    key_file.write_text('{"type": "service_account"}')
    server = ServerProcess([f"gs://{BUCKET}/models"],
                           env={"STORAGE_EMULATOR_HOST": gcs.endpoint,
                                "GOOGLE_APPLICATION_CREDENTIALS": str(key_file)})
    server.start(wait_ready=False)
    assert server.wait_exit(120) != 0
    assert "Unable to create GCS client. Check account credentials." in server.log()
