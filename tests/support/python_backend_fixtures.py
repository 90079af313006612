"""What the python backend tests share: a server over tests/support/python_models/repo, clients,
input builders, and ways to watch the stub processes.

Test modules import the fixtures and helpers they use from here; each module gets its own server.
"""

from __future__ import annotations

import os
import queue
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.models import write_model
from support.server_process import ServerProcess

MODELS = Path(__file__).resolve().parent / "python_models"
REPO = MODELS / "repo"


def one_model_server(tmp_path_factory: pytest.TempPathFactory, name: str, config: str,
                     model_py: str, *flags: str) -> Iterator[ServerProcess]:
    """For a module-scoped fixture (`yield from`): a server (given `flags`) over a repository
    holding one Python model, written from `config` and its version 1 `model.py`;
    `server.repo` is that repository."""
    repo = tmp_path_factory.mktemp("repo")
    write_model(repo, name, config, files={"1/model.py": model_py})
    with ServerProcess([repo], *flags) as process:
        process.repo = repo  # type: ignore[attr-defined]
        yield process


@pytest.fixture(scope="module")
def server():
    # crashy's initialize() waits, so that a restarting stub is visibly not ready.
    with ServerProcess([REPO], env={"CRASHY_INIT_DELAY": "1.0"}) as process:
        yield process


@pytest.fixture
def http(server: ServerProcess) -> httpclient.InferenceServerClient:
    return httpclient.InferenceServerClient(server.http_url, network_timeout=60)


@pytest.fixture
def grpc(server: ServerProcess) -> grpcclient.InferenceServerClient:
    return grpcclient.InferenceServerClient(server.grpc_url)


def http_input(name: str, array: np.ndarray, datatype: str) -> httpclient.InferInput:
    tensor = httpclient.InferInput(name, list(array.shape), datatype)
    tensor.set_data_from_numpy(array)
    return tensor


def grpc_input(name: str, array: np.ndarray, datatype: str) -> grpcclient.InferInput:
    tensor = grpcclient.InferInput(name, list(array.shape), datatype)
    tensor.set_data_from_numpy(array)
    return tensor


def add_sub_inputs(make: Callable = http_input, shape: tuple = (4,)) -> list:
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    b = np.full(shape, 0.5, dtype=np.float32)
    return [make("INPUT0", a, "FP32"), make("INPUT1", b, "FP32")]


def error_of(call: Callable[[], Any]) -> InferenceServerException:
    with pytest.raises(InferenceServerException) as info:
        call()
    return info.value


def wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(0.02)


def stub_pids(server_pid: int) -> list[int]:
    """Child processes of the server (its stubs)."""
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(server_pid)],
                         capture_output=True, text=True).stdout
    return [int(pid) for pid in out.split()]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def stream(client: grpcclient.InferenceServerClient, sends: list[tuple], timeout: float = 30.0,
           expected_finals: int | None = None) -> dict[str, list]:
    """Send (model, request_id, inputs) on one stream; collect results per request id until
    each request's final response (or an error) has come."""
    responses: queue.Queue = queue.Queue()
    client.start_stream(callback=lambda result, error: responses.put((result, error)))
    by_id: dict[str, list] = {rid: [] for _, rid, _ in sends}
    try:
        for model, rid, inputs in sends:
            client.async_stream_infer(model, inputs, request_id=rid,
                                      enable_empty_final_response=True)
        open_ids = set(by_id)
        deadline = time.monotonic() + timeout
        while open_ids:
            result, error = responses.get(timeout=max(0.1, deadline - time.monotonic()))
            if error is not None:
                # Errors carry no id on the stream: give them to the one request still open
                # that can take it (tests send one failing request at a time).
                by_id.setdefault("<errors>", []).append(error.message())
                continue
            response = result.get_response()
            by_id[response.id].append(result)
            if response.parameters["triton_final_response"].bool_param:
                open_ids.discard(response.id)
    finally:
        client.stop_stream()
    return by_id
