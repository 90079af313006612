"""One model lookup per request: a request runs on the version it was resolved to.

Frontends resolve the model once (`InferenceServer.resolve`), decode against that version's
configuration, submit the request to it and encode with its labels. A reload in between swaps
a new version in for new requests, but the resolved one stays loaded for its request, as a
Triton request holds its model.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from support.models import identity_config, write_model
from tritium.errors import Code, TritonError
from tritium.frontend.loop_bridge import answer
from tritium.request import InferenceRequest
from tritium.server import InferenceServer, ServerOptions
from tritium.tensor import Tensor


def batch_of(size: int) -> InferenceRequest:
    data = np.arange(size * 2, dtype=np.float32).reshape(size, 2)
    return InferenceRequest("m", inputs={"INPUT0": Tensor.from_numpy("INPUT0", data)})


@pytest.fixture
def server(tmp_path: Path):
    write_model(tmp_path, "m", identity_config("m", max_batch_size=8))
    server = InferenceServer(ServerOptions([tmp_path], model_control_mode="explicit",
                                           load_models=["m"]))
    server.start()
    yield server
    server.shutdown()


def reload_with_max_batch_size(server: InferenceServer, size: int) -> None:
    model_dir = server.options.model_repositories[0] / "m"
    (model_dir / "config.pbtxt").write_text(identity_config("m", max_batch_size=size))
    server.load_model("m")


def test_a_resolved_request_runs_on_its_version_across_a_reload(server) -> None:
    held = server.resolve("m")
    reload_with_max_batch_size(server, 2)
    # New lookups see the new version; the held one is still the old.
    assert server.model_config("m").max_batch_size == 2
    assert held.config.max_batch_size == 8
    with pytest.raises(TritonError) as refused:
        asyncio.run(answer(server.infer_async, batch_of(4)))
    assert refused.value.code is Code.INVALID_ARG
    # A batch the held version takes runs on it, although it was swapped out meanwhile.
    response = asyncio.run(answer(held.submit, batch_of(4)))
    np.testing.assert_array_equal(response.outputs[0].data, batch_of(4).inputs["INPUT0"].data)
    # With its request done, the old version finishes unloading.
    assert held.model.wait_idle(timeout=30)


def test_a_resolved_model_closed_unused_lets_its_version_unload(server) -> None:
    with server.resolve("m") as held:
        reload_with_max_batch_size(server, 2)
        assert held.model.inflight == 1  # the resolution holds it
    assert held.model.wait_idle(timeout=30)
    with pytest.raises(TritonError, match="takes one request"):
        held.submit(batch_of(1), lambda response, flags: None)


def test_resolving_a_retired_version_finds_its_replacement(server) -> None:
    first = server.resolve("m")
    first.close()
    reload_with_max_batch_size(server, 2)
    with server.resolve("m") as second:
        assert second.model is not first.model
        assert second.config.max_batch_size == 2
