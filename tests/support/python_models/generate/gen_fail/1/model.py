"""Every request fails with a model error (pb_utils.TritonError, default code)."""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse(error=pb_utils.TritonError("model says no"))
                for _ in requests]
