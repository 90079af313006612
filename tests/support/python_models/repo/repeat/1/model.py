"""A decoupled repeat with an async execute: one response per element of IN, the last one
carrying the final flag (no empty final); an element < 0 answers with an error instead."""

import asyncio

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    async def execute(self, requests):
        for request in requests:
            values = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            sender = request.get_response_sender()
            for index, value in enumerate(values):
                await asyncio.sleep(0)
                final = index == len(values) - 1
                flags = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL if final else 0
                if value < 0:
                    response = pb_utils.InferenceResponse(
                        error=pb_utils.TritonError(f"negative value at {index}"))
                else:
                    response = pb_utils.InferenceResponse([
                        pb_utils.Tensor("OUT", np.array([value], np.int32)),
                        pb_utils.Tensor("IDX", np.array([index], np.uint32)),
                    ])
                sender.send(response, flags=flags)
            if len(values) == 0:
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
