"""Answers its process id after sleeping SLEEP seconds; a negative SLEEP makes the process
exit at once (os._exit), as a crash would. With MARKER, the process id is first written to
that file, so a test knows the request is executing. initialize() waits
$CRASHY_INIT_DELAY seconds, so a restart takes a while."""

import os
import time

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        time.sleep(float(os.environ.get("CRASHY_INIT_DELAY", "0")))

    def execute(self, requests):
        responses = []
        for request in requests:
            seconds = float(pb_utils.get_input_tensor_by_name(request, "SLEEP").as_numpy()[0])
            marker = pb_utils.get_input_tensor_by_name(request, "MARKER")
            if marker is not None:
                with open(marker.as_numpy()[0].decode(), "w") as f:
                    f.write(str(os.getpid()))
            if seconds < 0:
                os._exit(3)
            time.sleep(seconds)
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("PID", np.array([os.getpid()], np.int64)),
            ]))
        return responses
