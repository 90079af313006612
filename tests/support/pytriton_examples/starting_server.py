"""PyTriton's remote-mode shape, the server side: a Triton serving one model, its
restricted endpoints (model-repository among them) guarded by TRITON_ACCESS_TOKEN."""

import os

import numpy as np

from tritium.pytriton.decorators import batch
from tritium.pytriton.model_config import ModelConfig, Tensor
from tritium.pytriton.triton import Triton, TritonSecurityConfig


@batch
def identity(**inputs):
    return [inputs["x"]]


security = TritonSecurityConfig(access_token=os.environ["TRITON_ACCESS_TOKEN"])
with Triton(security_config=security) as triton:
    triton.bind(model_name="Identity", infer_func=identity,
                inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
                outputs=[Tensor(dtype=np.float32, shape=(-1,))],
                config=ModelConfig(max_batch_size=16))
    triton.serve()
