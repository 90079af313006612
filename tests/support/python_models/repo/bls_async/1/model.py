"""Triton's BLS async example: two async_exec calls to add_sub awaited together; OUTPUT0
from the first, OUTPUT1 from the second."""

import asyncio

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    async def execute(self, requests):
        responses = []
        for request in requests:
            inputs = [
                pb_utils.get_input_tensor_by_name(request, "INPUT0"),
                pb_utils.get_input_tensor_by_name(request, "INPUT1"),
            ]
            calls = [
                pb_utils.InferenceRequest(
                    model_name="add_sub", requested_output_names=[name], inputs=inputs
                ).async_exec()
                for name in ("OUTPUT0", "OUTPUT1")
            ]
            first, second = await asyncio.gather(*calls)
            for response in (first, second):
                if response.has_error():
                    raise pb_utils.TritonModelException(response.error().message())
            responses.append(pb_utils.InferenceResponse([
                pb_utils.get_output_tensor_by_name(first, "OUTPUT0"),
                pb_utils.get_output_tensor_by_name(second, "OUTPUT1"),
            ]))
        return responses
