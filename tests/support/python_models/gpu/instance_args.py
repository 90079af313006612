"""Answers with the instance arguments its initialize() was given (JSON: each value with its
type name), and whether the stub runs it without any CUDA binding loaded."""

import json
import sys

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.args = {key: [type(value).__name__, value] for key, value in args.items()
                     if key.startswith("model_instance_")}

    def execute(self, requests):
        answer = dict(self.args)
        answer["cuda_modules"] = sorted(name for name in ("torch", "cupy", "cuda.bindings")
                                        if name in sys.modules)
        text = np.array([json.dumps(answer).encode()], dtype=np.object_)
        return [pb_utils.InferenceResponse([pb_utils.Tensor("ARGS", text)]) for _ in requests]
