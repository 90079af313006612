"""BLS with a GPU tensor: moves IN (from the network: a CPU tensor, even with
FORCE_CPU_ONLY_INPUT_TENSORS "no") to this instance's GPU with torch, adds 1, and sends it as X
to the model the CALLEE parameter names; answers the callee's OUT. CHECKS holds what it saw: its
own input's `is_cpu()`, how many times pb_utils copied a GPU tensor to the host during the
call (0 when the tensor went to the callee by CUDA IPC), and the callee's CHECKS."""

import json

import numpy as np
import torch

import triton_python_backend_utils as pb_utils
from triton_python_backend_utils import device_tensor

host_copies = 0
_to_host = device_tensor.DeviceTensor.to_host


def _counting_to_host(self):
    global host_copies
    host_copies += 1
    return _to_host(self)


device_tensor.DeviceTensor.to_host = _counting_to_host


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.callee = config["parameters"]["CALLEE"]["string_value"]
        self.device = torch.device(f"cuda:{args['model_instance_device_id']}")

    def execute(self, requests):
        global host_copies
        responses = []
        for request in requests:
            source = pb_utils.get_input_tensor_by_name(request, "IN")
            x = torch.from_dlpack(source.to_dlpack()).to(self.device) + 1
            host_copies = 0
            answer = pb_utils.InferenceRequest(
                model_name=self.callee, inputs=[pb_utils.Tensor.from_dlpack("X", x)],
                requested_output_names=["OUT", "CHECKS"]).exec()
            copies = host_copies
            if answer.has_error():
                raise pb_utils.TritonModelException(answer.error().message())
            out = pb_utils.get_output_tensor_by_name(answer, "OUT")
            callee = json.loads(pb_utils.get_output_tensor_by_name(answer, "CHECKS")
                                .as_numpy()[0])
            checks = {"input_is_cpu": source.is_cpu(), "host_copies": copies, "callee": callee}
            text = np.array([json.dumps(checks).encode()], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor("OUT", out.as_numpy()), pb_utils.Tensor("CHECKS", text)]))
        return responses
