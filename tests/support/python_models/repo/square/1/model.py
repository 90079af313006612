"""Triton's square_int32 decoupled example: for IN = n, n responses of OUT = n, sent from a
thread after execute returns, then the final flag on its own."""

import threading

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.threads = []

    def execute(self, requests):
        for request in requests:
            n = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
            thread = threading.Thread(target=self.respond, args=(request.get_response_sender(), n))
            thread.start()
            self.threads.append(thread)
        return None

    def respond(self, sender, n):
        for _ in range(n):
            out = pb_utils.Tensor("OUT", np.array([n], np.int32))
            sender.send(pb_utils.InferenceResponse([out]))
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    def finalize(self):
        for thread in self.threads:
            thread.join()
