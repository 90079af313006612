"""The callee of bls_gpu_caller.py: OUT = 3 * X computed with torch where X is (on the GPU
when this model takes GPU inputs and the caller sent one); CHECKS says whether X came on the
GPU, and on which device."""

import json

import numpy as np
import torch

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X")
            on_device = torch.from_dlpack(x.to_dlpack())
            y = (3 * on_device).contiguous()
            checks = {"input_is_cpu": x.is_cpu(), "input_device": str(on_device.device)}
            text = np.array([json.dumps(checks).encode()], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor.from_dlpack("OUT", y), pb_utils.Tensor("CHECKS", text)]))
        return responses
