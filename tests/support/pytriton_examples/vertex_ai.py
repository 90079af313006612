"""PyTriton's Vertex AI example shape: TritonConfig(allow_vertex_ai=True), the AIP_* variables
set by the script itself, the model bound inside `with Triton(...)`; the Vertex AI port from
PYTRITON_TRITON_CONFIG_VERTEX_AI_PORT. The endpoint needs its model when it starts, so the
server must start at serve(), not on entering the `with`."""

import os

import numpy as np

from tritium.pytriton.decorators import batch
from tritium.pytriton.model_config import ModelConfig, Tensor
from tritium.pytriton.triton import Triton, TritonConfig


@batch
def add_sub(**inputs):
    a, b = inputs.values()
    return {"add": a + b, "sub": a - b}


os.environ["AIP_MODE"] = "PREDICTION"
os.environ["AIP_PREDICT_ROUTE"] = "/predict"
os.environ["AIP_HEALTH_ROUTE"] = "/health"

with Triton(config=TritonConfig(allow_http=True, allow_vertex_ai=True)) as triton:
    triton.bind(
        model_name="AddSub",
        infer_func=add_sub,
        inputs=[Tensor(dtype=np.float32, shape=(-1,)), Tensor(dtype=np.float32, shape=(-1,))],
        outputs=[Tensor(name="add", dtype=np.float32, shape=(-1,)),
                 Tensor(name="sub", dtype=np.float32, shape=(-1,))],
        config=ModelConfig(max_batch_size=16),
        strict=True,
    )
    triton.serve()
