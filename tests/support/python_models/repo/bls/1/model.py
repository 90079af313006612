"""Triton's BLS sync example: runs INPUT0/INPUT1 on the model MODEL_NAME names."""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            model_name = pb_utils.get_input_tensor_by_name(request, "MODEL_NAME").as_numpy()[0]
            in_0 = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            in_1 = pb_utils.get_input_tensor_by_name(request, "INPUT1")
            infer_request = pb_utils.InferenceRequest(
                model_name=model_name.decode(),
                requested_output_names=["OUTPUT0", "OUTPUT1"],
                inputs=[in_0, in_1],
            )
            infer_response = infer_request.exec()
            if infer_response.has_error():
                raise pb_utils.TritonModelException(infer_response.error().message())
            responses.append(pb_utils.InferenceResponse([
                pb_utils.get_output_tensor_by_name(infer_response, "OUTPUT0"),
                pb_utils.get_output_tensor_by_name(infer_response, "OUTPUT1"),
            ]))
        return responses
