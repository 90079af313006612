"""Computes `2 * IN + 1` with torch on `cuda:<model_instance_device_id>` and answers the CUDA
tensor itself (`pb_utils.Tensor.from_dlpack`); CHECKS says what the model saw: the input's and
the output's `is_cpu()`, the current CUDA device, and what `as_numpy()` of a GPU tensor says."""

import json

import numpy as np
import torch

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.kind = args["model_instance_kind"]
        self.device = torch.device(f"cuda:{args['model_instance_device_id']}")
        # The stub made this instance's GPU current before initialize.
        self.current_at_init = torch.cuda.current_device()

    def execute(self, requests):
        responses = []
        for request in requests:
            source = pb_utils.get_input_tensor_by_name(request, "IN")
            x = torch.from_dlpack(source.to_dlpack()).to(self.device)
            y = (2 * x + 1).contiguous()
            out = pb_utils.Tensor.from_dlpack("OUT", y)
            back = torch.from_dlpack(out.to_dlpack())  # the same memory, on the device
            try:
                out.as_numpy()
                as_numpy = "no error"
            except pb_utils.TritonModelException as exc:
                as_numpy = str(exc)
            checks = {
                "kind": self.kind,
                "input_is_cpu": source.is_cpu(),
                "output_is_cpu": out.is_cpu(),
                "output_shape": out.shape(),
                "dlpack_device": list(out.__dlpack_device__()),
                "same_memory": back.data_ptr() == y.data_ptr() and back.device == y.device,
                "current_at_init": self.current_at_init,
                "current_at_execute": torch.cuda.current_device(),
                "as_numpy": as_numpy,
            }
            text = np.array([json.dumps(checks).encode()], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse(
                [out, pb_utils.Tensor("CHECKS", text)]))
        return responses
