"""Response parameters: generate writes them as top-level fields, and a parameter named like an
output hides that output."""

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse(
                [pb_utils.Tensor("text_output", np.array([b"from-output"], dtype=np.object_))],
                parameters={"count": 3, "flag": True, "note": "n", "text_output": "from-param"},
            )
            for _ in requests
        ]
