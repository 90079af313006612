"""A Python-based backend: this one model.py serves every model whose config says
`backend: "pyadd"`. SUM = A + B, times the number in the version directory's `scale.txt`
(1 when absent); NAME is the model that answered."""

import json
import os

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.name = args["model_name"]
        config = json.loads(args["model_config"])
        self.dtype = pb_utils.triton_string_to_numpy(
            pb_utils.get_output_config_by_name(config, "SUM")["data_type"])
        scale_file = os.path.join(pb_utils.get_model_dir(), "scale.txt")
        self.scale = 1.0
        if os.path.exists(scale_file):
            with open(scale_file) as f:
                self.scale = float(f.read())

    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "A").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "B").as_numpy()
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("SUM", ((a + b) * self.scale).astype(self.dtype)),
                pb_utils.Tensor("NAME", np.array([self.name.encode()], dtype=np.object_)),
            ]))
        return responses
