"""BYTES in, BYTES out: each element upper-cased, and each element's length."""

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            text = pb_utils.get_input_tensor_by_name(request, "TEXT").as_numpy()
            upper = np.array([t.upper() for t in text.reshape(-1)], dtype=np.object_)
            lengths = np.array([len(t) for t in text.reshape(-1)], dtype=np.int32)
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("UPPER", upper.reshape(text.shape)),
                pb_utils.Tensor("LENGTH", lengths.reshape(text.shape)),
            ]))
        return responses
