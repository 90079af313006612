"""As torch_gpu.py, with cupy: `2 * IN + 1` computed on the instance's GPU, answered as the cupy
array itself; CHECKS says what the model saw."""

import json

import cupy
import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.device_id = int(args["model_instance_device_id"])

    def execute(self, requests):
        responses = []
        for request in requests:
            source = pb_utils.get_input_tensor_by_name(request, "IN")
            with cupy.cuda.Device(self.device_id):
                y = 2 * cupy.asarray(source.as_numpy()) + 1
            out = pb_utils.Tensor.from_dlpack("OUT", y)
            back = cupy.from_dlpack(out)
            checks = {
                "output_is_cpu": out.is_cpu(),
                "dlpack_device": list(out.__dlpack_device__()),
                "same_memory": back.data.ptr == y.data.ptr,
                "current_at_execute": cupy.cuda.runtime.getDevice(),
            }
            text = np.array([json.dumps(checks).encode()], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse(
                [out, pb_utils.Tensor("CHECKS", text)]))
        return responses
