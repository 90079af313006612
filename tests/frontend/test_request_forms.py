"""Requests decoded from a frontend's template carry their form, and a model checks a form once
(request_normalizer): what a client sees must not change from the first such request to the
next. A form that failed fails again with the same message, a model reloaded with other dims
checks the form again, and an input's configured reshape is applied to every request."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.models import identity_config, write_model
from support.server_process import ServerProcess

_RESHAPED = """
name: "reshaped"
backend: "identity"
max_batch_size: 8
input { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] reshape { shape: [ 4, 4 ] } }
output { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4, 4 ] }
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, ServerProcess]]:
    repo = tmp_path_factory.mktemp("forms")
    write_model(repo, "shaped", identity_config("shaped", dims="[ 16 ]"))
    write_model(repo, "reshaped", _RESHAPED)
    with ServerProcess([repo], "--model-control-mode=explicit", "--load-model=*") as server:
        yield repo, server


def _client(module: ModuleType, server: ServerProcess):  # type: ignore[no-untyped-def]
    url = server.http_url if module is httpclient else server.grpc_url
    return module.InferenceServerClient(url)


def _infer(module: ModuleType, server: ServerProcess, model: str, shape: list[int]
           ) -> np.ndarray:
    tensor = module.InferInput("INPUT0", shape, "FP32")
    tensor.set_data_from_numpy(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))
    # Binary data over HTTP, raw contents over gRPC: the layouts both frontends keep templates of.
    return _client(module, server).infer(model, [tensor]).as_numpy("OUTPUT0")


def _error(module: ModuleType, server: ServerProcess, model: str, shape: list[int]) -> str:
    with pytest.raises(InferenceServerException) as caught:
        _infer(module, server, model, shape)
    return str(caught.value.message())


@pytest.mark.parametrize("module", [httpclient, grpcclient], ids=["http", "grpc"])
def test_a_failing_form_fails_every_time(served, module: ModuleType) -> None:
    _, server = served
    for _ in range(3):
        assert _infer(module, server, "shaped", [2, 16]).shape == (2, 16)
    errors = {_error(module, server, "shaped", [2, 8]) for _ in range(3)}
    assert errors == {
        "[request id: <id_unknown>] unexpected shape for input 'INPUT0' for model 'shaped'. "
        "Expected [-1,16], got [2,8]. NOTE: Setting a non-zero max_batch_size in the model "
        "config requires a batch dimension to be prepended to each input shape. If you want to "
        "specify the full shape including the batch dim in your input dims config, try setting "
        "max_batch_size to zero. See the model configuration docs for more info on "
        "max_batch_size."}
    assert _error(module, server, "shaped", [9, 16]) == (
        "[request id: <id_unknown>] inference request batch-size must be <= 8 for 'shaped'")
    assert _infer(module, server, "shaped", [2, 16]).shape == (2, 16)


@pytest.mark.parametrize("module", [httpclient, grpcclient], ids=["http", "grpc"])
def test_every_request_is_reshaped(served, module: ModuleType) -> None:
    _, server = served
    for _ in range(3):
        output = _infer(module, server, "reshaped", [2, 16])
        assert output.shape == (2, 4, 4)
        assert output.ravel().tolist() == list(range(32))


def test_a_reloaded_model_checks_its_forms_again(served) -> None:
    repo, server = served
    control = httpclient.InferenceServerClient(server.http_url)
    try:
        for module in (httpclient, grpcclient):
            assert _infer(module, server, "shaped", [1, 16]).shape == (1, 16)
        (repo / "shaped" / "config.pbtxt").write_text(identity_config("shaped", dims="[ 8 ]"))
        control.load_model("shaped")
        for module in (httpclient, grpcclient):
            assert "Expected [-1,8], got [1,16]" in _error(module, server, "shaped", [1, 16])
            assert _infer(module, server, "shaped", [1, 8]).shape == (1, 8)
    finally:
        (repo / "shaped" / "config.pbtxt").write_text(identity_config("shaped", dims="[ 16 ]"))
        control.load_model("shaped")
