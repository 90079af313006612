"""A batching model (max_batch_size 4): text_output echoes text_input, shapes maps each input
given to its shape (batch dimension included)."""

import json

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            shapes = {}
            for name in ("text_input", "n", "vec"):
                t = pb_utils.get_input_tensor_by_name(request, name)
                if t is not None:
                    shapes[name] = list(t.as_numpy().shape)
            text = pb_utils.get_input_tensor_by_name(request, "text_input").as_numpy()
            b = text.shape[0]
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("text_output", text.astype(np.object_)),
                pb_utils.Tensor("shapes", np.array(
                    [[json.dumps(shapes, sort_keys=True).encode()]] * b, dtype=np.object_)),
            ]))
        return responses
