"""Triton's python_backend add_sub example, unmodified in spirit: a Python model served by the
python backend. OUTPUT0 = INPUT0 + INPUT1 and OUTPUT1 = INPUT0 - INPUT1 (FP32 [4]).

Try it with `make serve`, then:

    import numpy as np, tritonclient.http as httpclient
    client = httpclient.InferenceServerClient("localhost:8000")
    inputs = [httpclient.InferInput("INPUT0", [4], "FP32"),
              httpclient.InferInput("INPUT1", [4], "FP32")]
    inputs[0].set_data_from_numpy(np.arange(4, dtype=np.float32))
    inputs[1].set_data_from_numpy(np.ones(4, dtype=np.float32))
    result = client.infer("add_sub", inputs)
    print(result.as_numpy("OUTPUT0"), result.as_numpy("OUTPUT1"))
"""

import json

# triton_python_backend_utils is available in every Python model that the python backend runs.
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """Every Python model must define the class TritonPythonModel."""

    def initialize(self, args):
        """Called once when the model (one instance of it) is loaded. `args` has the keys
        model_config (JSON), model_instance_kind, model_instance_name,
        model_instance_device_id, model_repository, model_version and model_name."""
        self.model_config = model_config = json.loads(args["model_config"])
        output0_config = pb_utils.get_output_config_by_name(model_config, "OUTPUT0")
        output1_config = pb_utils.get_output_config_by_name(model_config, "OUTPUT1")
        self.output0_dtype = pb_utils.triton_string_to_numpy(output0_config["data_type"])
        self.output1_dtype = pb_utils.triton_string_to_numpy(output1_config["data_type"])

    def execute(self, requests):
        """Called with a list of pb_utils.InferenceRequest; returns one
        pb_utils.InferenceResponse per request, in the same order."""
        output0_dtype = self.output0_dtype
        output1_dtype = self.output1_dtype
        responses = []
        for request in requests:
            in_0 = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            in_1 = pb_utils.get_input_tensor_by_name(request, "INPUT1")
            out_0, out_1 = (
                in_0.as_numpy() + in_1.as_numpy(),
                in_0.as_numpy() - in_1.as_numpy(),
            )
            out_tensor_0 = pb_utils.Tensor("OUTPUT0", out_0.astype(output0_dtype))
            out_tensor_1 = pb_utils.Tensor("OUTPUT1", out_1.astype(output1_dtype))
            inference_response = pb_utils.InferenceResponse(
                output_tensors=[out_tensor_0, out_tensor_1]
            )
            responses.append(inference_response)
        return responses

    def finalize(self):
        """Called once when the model is unloaded."""
        print("Cleaning up...")
