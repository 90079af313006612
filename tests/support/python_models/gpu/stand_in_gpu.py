"""Answers `2 * IN + 1` as a "CUDA" tensor, on a machine without a GPU: `StandInCudaArray` shows
pb_utils what a cupy array on GPU 0 shows it (`__dlpack_device__` kDLCUDA, `flags`, `dtype`,
`get()`), holding host memory. So the stub's GPU-tensor path (from_dlpack, is_cpu, as_numpy's
error, the one host copy for the wire) runs in CPU tests. The config parameter ANSWER_BY says
how the response goes: "return" (execute's list) or "sender" (the response sender)."""

import json

import numpy as np

import triton_python_backend_utils as pb_utils


class StandInCudaArray:
    __module__ = "cupy._core.core"  # pb_utils keeps cupy arrays as they are

    def __init__(self, array):
        self._array = array
        self.shape = array.shape
        self.dtype = array.dtype
        self.flags = array.flags
        self.copies = 0

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None, **kwargs):
        return self._array.__dlpack__()

    def get(self):
        self.copies += 1
        return self._array.copy()


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.by_sender = config["parameters"]["ANSWER_BY"]["string_value"] == "sender"

    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            on_gpu = StandInCudaArray(np.ascontiguousarray(2 * x + 1))
            out = pb_utils.Tensor.from_dlpack("OUT", on_gpu)
            try:
                out.as_numpy()
                as_numpy = "no error"
            except pb_utils.TritonModelException as exc:
                as_numpy = str(exc)
            checks = {"is_cpu": out.is_cpu(), "shape": out.shape(), "as_numpy": as_numpy,
                      "dlpack_device": list(out.__dlpack_device__()),
                      "copies_before_answer": on_gpu.copies}
            text = np.array([json.dumps(checks).encode()], dtype=np.object_)
            response = pb_utils.InferenceResponse([out, pb_utils.Tensor("CHECKS", text)])
            if self.by_sender:
                request.get_response_sender().send(
                    response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                responses.append(None)
            else:
                responses.append(response)
        return None if self.by_sender else responses
