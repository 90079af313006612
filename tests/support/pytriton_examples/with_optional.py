"""PyTriton's add_sub_python_with_optional shape: @fill_optionals over @batch over
@first_value, an optional input with a default and one without."""

import numpy as np

from tritium.pytriton.decorators import batch, fill_optionals, first_value
from tritium.pytriton.model_config import ModelConfig, Tensor
from tritium.pytriton.triton import Triton


@fill_optionals(t=np.array([2.0], dtype=np.float32))
@batch
@first_value("w")
def add_sub(a, b, t, **inputs):
    w = inputs.get("w", 1)
    return {"add": a * w + b + t, "sub": a * w - b + t}


with Triton() as triton:
    triton.bind(
        model_name="AddSub",
        infer_func=add_sub,
        inputs=[Tensor(name="a", dtype=np.float32, shape=(-1,)),
                Tensor(name="b", dtype=np.float32, shape=(-1,)),
                Tensor(name="t", dtype=np.float32, shape=(-1,), optional=True),
                Tensor(name="w", dtype=np.float32, shape=(-1,), optional=True)],
        outputs=[Tensor(name="add", dtype=np.float32, shape=(-1,)),
                 Tensor(name="sub", dtype=np.float32, shape=(-1,))],
        config=ModelConfig(max_batch_size=16),
        strict=True,
    )
    triton.serve()
