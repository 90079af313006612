"""A model with is_ready(): each request sets the readiness to READY and answers what it was."""

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.ready = True

    def is_ready(self):
        return self.ready

    def execute(self, requests):
        responses = []
        for request in requests:
            was = self.ready
            self.ready = bool(pb_utils.get_input_tensor_by_name(request, "READY").as_numpy()[0])
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("WAS_READY", np.array([was], np.bool_)),
            ]))
        return responses
