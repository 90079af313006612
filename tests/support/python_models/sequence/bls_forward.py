"""A BLS test model: forwards INPUT to the model named by parameter `target`, with the
correlation id and flags of its own request, and returns the target's OUTPUT (or its error)."""

import json

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.target = config["parameters"]["target"]["string_value"]

    def execute(self, requests):
        responses = []
        for request in requests:
            call = pb_utils.InferenceRequest(
                model_name=self.target,
                inputs=[pb_utils.get_input_tensor_by_name(request, "INPUT")],
                requested_output_names=["OUTPUT"],
                correlation_id=request.correlation_id(),
                flags=request.flags(),
            )
            answer = call.exec()
            if answer.has_error():
                responses.append(pb_utils.InferenceResponse(error=answer.error()))
            else:
                output = pb_utils.get_output_tensor_by_name(answer, "OUTPUT")
                responses.append(pb_utils.InferenceResponse([output]))
        return responses
