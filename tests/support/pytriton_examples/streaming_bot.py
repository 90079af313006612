"""PyTriton's streaming example shape: a class holding its state, whose `__call__` (under
@batch) is a generator bound as a decoupled model; each yield is one response. Clients read
it with DecoupledModelClient over gRPC."""

import numpy as np

from tritium.pytriton.decorators import batch, first_value
from tritium.pytriton.model_config import ModelConfig, Tensor
from tritium.pytriton.triton import Triton


class WordStreamer:
    def __init__(self, separator: bytes) -> None:
        self.separator = separator

    @batch
    @first_value("repeat")
    def __call__(self, text, repeat=1):
        for word in text[0][0].split(self.separator):
            yield {"word": np.array([[word * repeat]], dtype=np.object_)}


with Triton() as triton:
    triton.bind(
        model_name="Words",
        infer_func=WordStreamer(b" "),
        inputs=[Tensor(name="text", dtype=bytes, shape=(1,)),
                Tensor(name="repeat", dtype=np.int32, shape=(1,), optional=True)],
        outputs=[Tensor(name="word", dtype=bytes, shape=(1,))],
        config=ModelConfig(decoupled=True),
        strict=True,
    )
    triton.serve()
