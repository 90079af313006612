"""The framework backends take a list of requests of any batch sizes in one execute, as a
dynamic batcher hands them over: one framework call, each request answered with its own slice
and only the outputs it asked for."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from support import onnx_models, torch_models
from support.models import write_model
from tritium.backend.manager import BackendManager
from tritium.config import normalize_model_config, read_model_config
from tritium.model.model import TritonModel
from tritium.request import InferenceRequest, InferenceResponse, RequestedOutput, ResponseSender
from tritium.tensor import Tensor

PT_CONFIG = """
platform: "pytorch_libtorch"
max_batch_size: 16
input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] },
        { name: "INPUT__1" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 4 ] },
         { name: "OUTPUT__1" data_type: TYPE_FP32 dims: [ 4 ] } ]
"""


def load(path: Path) -> TritonModel:
    config = read_model_config(path, auto_complete=True)
    normalize_model_config(config, path)
    return TritonModel.load(config, 1, path, BackendManager(), auto_complete=True)


def request(model: str, names: tuple[str, str], a: np.ndarray, b: np.ndarray,
            wanted: list[str], answers: list) -> InferenceRequest:
    req = InferenceRequest(
        model,
        inputs={names[0]: Tensor(names[0], "FP32", a.shape, a),
                names[1]: Tensor(names[1], "FP32", b.shape, b)},
        requested_outputs=[RequestedOutput(n) for n in wanted],
    )
    req.batch_size = a.shape[0]

    def deliver(response: InferenceResponse | None, flags: int) -> None:
        if response is not None:
            answers.append(response)

    req.response_sender = ResponseSender(deliver)
    return req


@pytest.mark.parametrize("framework", ["onnxruntime", "pytorch"])
def test_one_execute_answers_each_request_of_a_batch(tmp_path: Path, framework: str) -> None:
    if framework == "onnxruntime":
        onnx_models.save(onnx_models.add_sub(), tmp_path / "m" / "1" / "model.onnx")
        names, outs = ("INPUT0", "INPUT1"), ("OUTPUT0", "OUTPUT1")
    else:
        write_model(tmp_path, "m", PT_CONFIG)
        torch_models.save(torch_models.AddSub(), tmp_path / "m" / "1" / "model.pt")
        names, outs = ("INPUT__0", "INPUT__1"), ("OUTPUT__0", "OUTPUT__1")
    model = load(tmp_path / "m")
    try:
        rng = np.random.default_rng(5)
        sizes = [1, 7, 5, 3]
        wanted = [[], [outs[1]], [outs[0]], [outs[0], outs[1]]]
        answers: list[list[InferenceResponse]] = [[] for _ in sizes]
        data = [(rng.standard_normal((n, 4)).astype(np.float32),
                 rng.standard_normal((n, 4)).astype(np.float32)) for n in sizes]
        requests = [request("m", names, a, b, wanted[i], answers[i])
                    for i, (a, b) in enumerate(data)]
        model.instances[0].execute(requests)
        for i, (a, b) in enumerate(data):
            (response,) = answers[i]
            assert response.error is None
            got = {t.name: t.data for t in response.outputs}
            assert sorted(got) == sorted(wanted[i] or outs)
            if outs[0] in got:
                np.testing.assert_allclose(got[outs[0]], a + b, rtol=1e-6)
            if outs[1] in got:
                np.testing.assert_allclose(got[outs[1]], a - b, rtol=1e-6)
    finally:
        model.unload()
