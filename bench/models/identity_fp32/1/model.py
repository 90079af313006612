"""Issue 14's identity model: each request answered with its own INPUT0 as OUTPUT0."""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("OUTPUT0",
                                pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy())
            ])
            for request in requests
        ]
