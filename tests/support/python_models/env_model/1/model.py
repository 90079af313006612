"""Answers sys.prefix: which Python environment runs this model."""

import sys

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        prefix = np.array([sys.prefix.encode()], dtype=np.object_)
        return [pb_utils.InferenceResponse([pb_utils.Tensor("PREFIX", prefix)]) for _ in requests]
