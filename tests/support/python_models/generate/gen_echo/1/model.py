"""What the generate endpoint made of a request: text_output echoes text_input, params is
request.parameters(), shapes maps each input given to [shape, numpy dtype], and n_out, vec_out,
mat_out echo n, vec, mat (defaults when absent) to show how outputs come back."""

import json

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            shapes = {}
            for name in ("text_input", "n", "vec", "flag", "mat"):
                t = pb_utils.get_input_tensor_by_name(request, name)
                if t is not None:
                    a = t.as_numpy()
                    shapes[name] = [list(a.shape), str(a.dtype)]
            text = pb_utils.get_input_tensor_by_name(request, "text_input").as_numpy()
            n = pb_utils.get_input_tensor_by_name(request, "n")
            n = n.as_numpy().reshape(-1) if n is not None else np.array([1, 2], np.int32)
            vec = pb_utils.get_input_tensor_by_name(request, "vec")
            vec = vec.as_numpy() if vec is not None else np.array([0.5], np.float32)
            mat = pb_utils.get_input_tensor_by_name(request, "mat")
            mat = mat.as_numpy() if mat is not None else np.zeros((1, 1), np.int64)
            out_text = np.array([b"echo: " + text.reshape(-1)[0]], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("text_output", out_text),
                pb_utils.Tensor("params",
                                np.array([request.parameters().encode()], dtype=np.object_)),
                pb_utils.Tensor("n_out", n.astype(np.int32)),
                pb_utils.Tensor("vec_out", vec.astype(np.float32)),
                pb_utils.Tensor("shapes", np.array(
                    [json.dumps(shapes, sort_keys=True).encode()], dtype=np.object_)),
                pb_utils.Tensor("mat_out", mat.astype(np.int64)),
            ]))
        return responses
