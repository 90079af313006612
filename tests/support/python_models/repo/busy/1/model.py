"""Busy-loops SECONDS (holding its own GIL), reporting when it started and ended
(time.monotonic(), one clock for every process on the machine) and its process id."""

import os
import time

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            seconds = float(pb_utils.get_input_tensor_by_name(request, "SECONDS").as_numpy()[0])
            start = time.monotonic()
            while time.monotonic() - start < seconds:
                pass
            end = time.monotonic()
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("START", np.array([start], np.float64)),
                pb_utils.Tensor("END", np.array([end], np.float64)),
                pb_utils.Tensor("PID", np.array([os.getpid()], np.int64)),
            ]))
        return responses
