"""ModelLifeCycle in-process: states while loading, after failure, and unload waiting."""

from __future__ import annotations

import asyncio
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from support.models import identity_config, write_model
from tritium.backend.manager import BackendManager
from tritium.errors import Code, TritonError
from tritium.frontend.loop_bridge import answer
from tritium.repository import ModelLifeCycle, ModelReadyState, RepositoryScanner
from tritium.request import InferenceRequest
from tritium.server import InferenceServer, ServerOptions
from tritium.tensor import Tensor

GATED_BACKEND = """
import threading
from tritium.backend import ModelState
GATE = threading.Event()

def model_initialize(model):
    GATE.wait(30)
    ModelState.create(model)

def model_instance_execute(instance, requests):
    pass
"""


def load_all(lifecycle: ModelLifeCycle, repository: RepositoryScanner) -> None:
    for source in repository.scan().models.values():
        lifecycle.load(source, repository.model_config(source))


def test_model_is_unavailable_while_loading_then_ready(tmp_path: Path) -> None:
    (tmp_path / "be" / "gated").mkdir(parents=True)
    (tmp_path / "be" / "gated" / "backend.py").write_text(textwrap.dedent(GATED_BACKEND))
    write_model(tmp_path / "repo", "slowload", 'backend: "gated"\n')
    backends = BackendManager([tmp_path / "be"])
    repository = RepositoryScanner([tmp_path / "repo"], auto_complete=True)
    lifecycle = ModelLifeCycle(repository, backends)
    loader = threading.Thread(target=load_all, args=(lifecycle, repository))
    loader.start()
    deadline = time.monotonic() + 10
    while "slowload" not in lifecycle.status() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert lifecycle.status()["slowload"][1].state is ModelReadyState.LOADING
    with pytest.raises(TritonError) as info:
        lifecycle.get("slowload")
    assert info.value.code is Code.NOT_FOUND  # Triton's GetModel: no READY version
    assert "has no available versions" in str(info.value)
    with pytest.raises(TritonError) as info:
        lifecycle.get("slowload", 1)
    assert "version 1 is not at ready state" in str(info.value)

    backends.acquire("gated").library.model_initialize.__globals__["GATE"].set()
    loader.join()
    assert lifecycle.get("slowload", 1).version == 1
    lifecycle.unload_all()
    assert lifecycle.status()["slowload"][1].state is ModelReadyState.UNAVAILABLE


def test_unknown_model_and_version_are_not_found(tmp_path: Path) -> None:
    write_model(tmp_path, "m", identity_config("m"))
    repository = RepositoryScanner([tmp_path], auto_complete=True)
    lifecycle = ModelLifeCycle(repository, BackendManager())
    load_all(lifecycle, repository)
    with pytest.raises(TritonError) as info:
        lifecycle.get("nope")
    assert info.value.code is Code.NOT_FOUND
    with pytest.raises(TritonError) as info:
        lifecycle.get("m", 4)
    assert info.value.code is Code.NOT_FOUND
    lifecycle.unload_all()


def test_shutdown_waits_for_in_flight_requests(tmp_path: Path) -> None:
    write_model(tmp_path, "slow", identity_config(
        "slow", extra='parameters { key: "execute_delay_ms" value: { string_value: "400" } }'))
    server = InferenceServer(ServerOptions([tmp_path]))
    server.start()
    data = np.ones((1, 2), np.float32)

    async def scenario() -> np.ndarray:
        request = InferenceRequest(
            "slow", inputs={"INPUT0": Tensor("INPUT0", "FP32", (1, 2), data)}
        )
        pending = asyncio.ensure_future(answer(server.infer_async, request))
        await asyncio.sleep(0.1)  # in flight (counted from submit on), likely executing
        loop = asyncio.get_running_loop()
        shutdown = loop.run_in_executor(None, server.shutdown)
        response = await pending
        await shutdown
        return response.outputs[0].data

    np.testing.assert_array_equal(asyncio.run(scenario()), data)
    assert server.lifecycle.status()["slow"][1].state is ModelReadyState.UNAVAILABLE
