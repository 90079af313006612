"""Holds HOLD_MIB of GPU memory (torch, on its instance's device) from initialize on, while the
file its HOLD_WHILE_EXISTS parameter names exists (a restarted stub then holds none), and
answers its stub's process id: for checking that the memory goes when the stub does."""

import json
import os

import numpy as np
import torch

import triton_python_backend_utils as pb_utils

HOLD_MIB = 2048


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        flag = config["parameters"]["HOLD_WHILE_EXISTS"]["string_value"]
        self.held = None
        if os.path.exists(flag):
            device = torch.device(f"cuda:{args['model_instance_device_id']}")
            self.held = torch.ones(HOLD_MIB * 1024 * 1024 // 4, dtype=torch.float32,
                                   device=device)
            torch.cuda.synchronize(device)

    def execute(self, requests):
        pid = np.array([os.getpid()], dtype=np.int64)
        return [pb_utils.InferenceResponse([pb_utils.Tensor("PID", pid)]) for _ in requests]
