"""Decoupled: TICKS responses carrying the process id, 50 ms apart, from a thread; then the
final flag. A long stream stays open long enough for a test to kill the process."""

import os
import threading
import time

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            ticks = int(pb_utils.get_input_tensor_by_name(request, "TICKS").as_numpy()[0])
            threading.Thread(target=self.tick, args=(request.get_response_sender(), ticks),
                             daemon=True).start()
        return None

    def tick(self, sender, ticks):
        pid = pb_utils.Tensor("PID", np.array([os.getpid()], np.int64))
        for _ in range(ticks):
            sender.send(pb_utils.InferenceResponse([pid]))
            time.sleep(0.05)
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
