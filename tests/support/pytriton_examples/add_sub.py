"""PyTriton's add_sub example shape: unnamed inputs (INPUT_1, INPUT_2), @batch returning a
tuple in the outputs' order, strict checking; ports from PYTRITON_TRITON_CONFIG_*."""

import numpy as np

from tritium.pytriton.decorators import batch
from tritium.pytriton.model_config import ModelConfig, Tensor
from tritium.pytriton.triton import Triton


@batch
def add_sub(**inputs):
    a, b = inputs.values()
    return a + b, a - b


with Triton() as triton:
    triton.bind(
        model_name="AddSub",
        infer_func=add_sub,
        inputs=[Tensor(dtype=np.float32, shape=(-1,)), Tensor(dtype=np.float32, shape=(-1,))],
        outputs=[Tensor(name="add", dtype=np.float32, shape=(-1,)),
                 Tensor(dtype=np.float32, shape=(-1,))],
        config=ModelConfig(max_batch_size=16),
        strict=True,
    )
    triton.serve()
