"""A compiled backend nobody here wrote: NVIDIA's Python backend (libtriton_python.so from the
nvidia-pytriton==0.7.0 wheel, Triton 2.51) serving Python models through Tritium's C API.

The fixture installs the wheel into its own venv when missing (about 55 MB from PyPI; a
failure to install fails these tests). The backend's stub embeds the venv's Python 3.11, so
the server runs with the venv's libraries on LD_LIBRARY_PATH and its bin/ first on PATH, as
../shared/tools/reference-triton.sh runs the real Triton.
"""

from __future__ import annotations

import fcntl
import os
import queue
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from elftools.elf.elffile import ELFFile
from tritonclient.utils import InferenceServerException

from support import PYTHON_MODELS
from support.server_process import ServerProcess
from tritium.backend.native import build

VENV = Path(os.environ.get("TRITIUM_PYTRITON_VENV", "/tmp/ref-triton-venv"))
SITE = VENV / "lib" / "python3.11" / "site-packages"
TRITON = SITE / "pytriton" / "tritonserver"
BACKENDS = TRITON / "backends"
MODELS = PYTHON_MODELS / "repo"


def _install() -> None:
    """nvidia-pytriton==0.7.0 in VENV (under the lock reference-triton.sh takes too)."""
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{VENV}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (BACKENDS / "python" / "libtriton_python.so").exists():
            python = shutil.which("python3.11")
            if python is None:
                pytest.fail("the pytriton wheel's Python backend needs python3.11")
            try:
                if not (VENV / "bin" / "python").exists():
                    subprocess.run([python, "-m", "venv", str(VENV)], check=True)
                subprocess.run([str(VENV / "bin" / "python"), "-m", "pip", "install", "-q",
                                "nvidia-pytriton==0.7.0"], check=True)
            except subprocess.CalledProcessError as exc:
                pytest.fail(f"could not install nvidia-pytriton==0.7.0: {exc}")
        stub = TRITON / "python_backend_stubs" / "3.11" / "triton_python_backend_stub"
        target = BACKENDS / "python" / "triton_python_backend_stub"
        if not target.exists() or target.read_bytes() != stub.read_bytes():
            shutil.copy(stub, target)
            target.chmod(0o755)


def _dynamic_symbols(path: Path, defined: bool) -> set[str]:
    with open(path, "rb") as handle:
        table = ELFFile(handle).get_section_by_name(".dynsym")
        return {
            s.name for s in table.iter_symbols()
            if s.name.startswith("TRITON")
            and (s["st_shndx"] != "SHN_UNDEF") == defined
        }


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    _install()
    repo = tmp_path_factory.mktemp("pytriton_models")
    for name in ("add_sub", "bytes_model", "error_model", "repeat", "bls"):
        shutil.copytree(MODELS / name, repo / name)
    libdir = subprocess.run(
        [str(VENV / "bin" / "python"), "-c",
         "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))"],
        check=True, capture_output=True, text=True).stdout.strip()
    env = {
        "LD_LIBRARY_PATH": f"{SITE / 'nvidia_pytriton.libs'}:{libdir}",
        "PATH": f"{VENV / 'bin'}:{os.environ['PATH']}",
        "VIRTUAL_ENV": str(VENV),
    }
    with ServerProcess([repo], f"--backend-directory={BACKENDS}", env=env) as process:
        yield process


def test_the_backend_binds_only_functions_tritium_exports():
    _install()
    needed = _dynamic_symbols(BACKENDS / "python" / "libtriton_python.so", defined=False)
    ours = _dynamic_symbols(build.library_path(), defined=True)
    triton = _dynamic_symbols(next((SITE / "nvidia_pytriton.libs").glob("libtritonserver*.so")),
                              defined=True)
    assert len(needed) > 100
    assert needed <= ours
    assert ours == triton  # the whole surface Triton 2.51 exports


def test_add_sub_over_http_and_grpc(server):
    a = np.array([1, 2, 3, 4], np.float32)
    b = np.array([0.5, 0.5, 2, 2], np.float32)
    for module, url in ((httpclient, server.http_url), (grpcclient, server.grpc_url)):
        client = module.InferenceServerClient(url)
        inputs = [module.InferInput("INPUT0", [4], "FP32"),
                  module.InferInput("INPUT1", [4], "FP32")]
        inputs[0].set_data_from_numpy(a)
        inputs[1].set_data_from_numpy(b)
        result = client.infer("add_sub", inputs)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)


def test_bytes(server):
    client = httpclient.InferenceServerClient(server.http_url)
    text = np.array([b"hello", b"caf\xc3\xa9", b""], dtype=np.object_)
    tensor = httpclient.InferInput("TEXT", [3], "BYTES")
    tensor.set_data_from_numpy(text)
    result = client.infer("bytes_model", [tensor])
    # bytes.upper(): ASCII only
    assert result.as_numpy("UPPER").tolist() == [b"HELLO", b"CAF\xc3\xa9", b""]
    assert result.as_numpy("LENGTH").tolist() == [5, 5, 0]


def _mode(client, mode):
    tensor = grpcclient.InferInput("MODE", [1], "INT32")
    tensor.set_data_from_numpy(np.array([mode], np.int32))
    return client.infer("error_model", [tensor])


def test_errors_keep_the_server_serving(server):
    client = grpcclient.InferenceServerClient(server.grpc_url)
    with pytest.raises(InferenceServerException, match="mode 1 failed"):
        _mode(client, 1)
    with pytest.raises(InferenceServerException, match="mode 3 raised"):
        _mode(client, 3)
    assert _mode(client, 0).as_numpy("OUT").tolist() == [0]


def test_decoupled_stream(server):
    client = grpcclient.InferenceServerClient(server.grpc_url)
    results: queue.Queue = queue.Queue()
    client.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        tensor = grpcclient.InferInput("IN", [4], "INT32")
        tensor.set_data_from_numpy(np.array([7, 8, 9, 10], np.int32))
        client.async_stream_infer("repeat", [tensor])
        got = []
        for _ in range(4):
            result, error = results.get(timeout=60)
            assert error is None, error
            got.append((int(result.as_numpy("OUT")[0]), int(result.as_numpy("IDX")[0])))
    finally:
        client.stop_stream()
    assert got == [(7, 0), (8, 1), (9, 2), (10, 3)]


def test_bls_into_tritium(server):
    client = httpclient.InferenceServerClient(server.http_url)
    a = np.array([1, 2, 3, 4], np.float32)
    inputs = [httpclient.InferInput("MODEL_NAME", [1], "BYTES"),
              httpclient.InferInput("INPUT0", [4], "FP32"),
              httpclient.InferInput("INPUT1", [4], "FP32")]
    inputs[0].set_data_from_numpy(np.array([b"add_sub"], dtype=np.object_))
    inputs[1].set_data_from_numpy(a)
    inputs[2].set_data_from_numpy(a)
    result = client.infer("bls", inputs)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), 2 * a)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), 0 * a)
