"""Decoupled: `count` responses "<text> i" (index i), `delay_ms` apart, from a thread, then the
final flag on its own. At index `fail_at` it sends an error response instead. A request found
cancelled (request.is_cancelled()) stops early; its id is appended to cancelled.txt in the
model repository so a test can see that the model saw the cancellation."""

import os
import threading
import time

import numpy as np

import triton_python_backend_utils as pb_utils


def _scalar(request, name, default):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    return default if tensor is None else int(tensor.as_numpy().reshape(-1)[0])


class TritonPythonModel:
    def initialize(self, args):
        self.log = os.path.join(args["model_repository"], "cancelled.txt")

    def execute(self, requests):
        for request in requests:
            threading.Thread(target=self.stream, args=(request,), daemon=True).start()
        return None

    def stream(self, request):
        sender = request.get_response_sender()
        text = pb_utils.get_input_tensor_by_name(request, "text_input").as_numpy().reshape(-1)[0]
        count = _scalar(request, "count", 1)
        delay = _scalar(request, "delay_ms", 0) / 1000.0
        fail_at = _scalar(request, "fail_at", -1)
        for i in range(count):
            if request.is_cancelled():
                with open(self.log, "a") as log:
                    log.write(request.request_id() + "\n")
                break
            if i == fail_at:
                error = pb_utils.TritonError(f"failed at {i}")
                sender.send(pb_utils.InferenceResponse(error=error))
            else:
                sender.send(pb_utils.InferenceResponse([
                    pb_utils.Tensor("text_output", np.array([text + b" %d" % i], dtype=np.object_)),
                    pb_utils.Tensor("index", np.array([i], np.int32)),
                ]))
            time.sleep(delay)
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
