"""PyTriton's remote-mode shape, the binding side: RemoteTriton loads Mul into the server at
REMOTE_URL and serves it from this process."""

import os

import numpy as np

from tritium.pytriton.decorators import batch
from tritium.pytriton.model_config import ModelConfig, Tensor
from tritium.pytriton.triton import RemoteTriton


@batch
def mul(**inputs):
    a, b = inputs.values()
    return {"mul": np.multiply(a, b)}


with RemoteTriton(url=os.environ["REMOTE_URL"],
                  access_token=os.getenv("TRITON_ACCESS_TOKEN")) as remote:
    remote.bind(model_name="Mul", infer_func=mul,
                inputs=[Tensor(dtype=np.float32, shape=(-1,)),
                        Tensor(dtype=np.float32, shape=(-1,))],
                outputs=[Tensor(name="mul", dtype=np.float32, shape=(-1,))],
                config=ModelConfig(max_batch_size=16))
    remote.serve()
