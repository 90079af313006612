"""Not decoupled: waits up to 10 s for its request to be cancelled (request.is_cancelled()),
noting the request id in cancelled.txt when it is, then answers with text_output "waited"."""

import os
import time

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.log = os.path.join(args["model_repository"], "cancelled.txt")

    def execute(self, requests):
        responses = []
        for request in requests:
            deadline = time.monotonic() + 10.0
            while not request.is_cancelled() and time.monotonic() < deadline:
                time.sleep(0.02)
            if request.is_cancelled():
                with open(self.log, "a") as log:
                    log.write(request.request_id() + "\n")
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("text_output", np.array([b"waited"], dtype=np.object_))]))
        return responses
