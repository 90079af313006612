"""A model repository for the in-process API tests: Triton test_api.py's echo model, add_sub,
an identity model, the repeat backend and a model that fails to load."""

from __future__ import annotations

import shutil
from pathlib import Path

from support import PYTHON_MODELS
from support.models import identity_config, write_model

# Like Triton's python/test/test_api_models/test: every `<type>_input` comes back as
# `<type>_output`, plus the request's parameters as JSON; the configuration is completed by the
# model (auto_complete_config), decoupled when the load says so.
ECHO_MODEL = '''
import json

import numpy as np
import triton_python_backend_utils as pb_utils

TYPES = ["bool", "int32", "int64", "fp16", "fp32", "string"]


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        for name in TYPES:
            data_type = "TYPE_" + name.upper()
            config.add_input({"name": name + "_input", "data_type": data_type,
                              "dims": [-1, -1], "optional": True})
            config.add_output({"name": name + "_output", "data_type": data_type,
                               "dims": [-1, -1]})
        config.add_output({"name": "output_parameters", "data_type": "TYPE_STRING",
                           "dims": [1]})
        config.set_max_batch_size(0)
        parameters = config.as_dict().get("parameters", {})
        if parameters.get("decoupled", {}).get("string_value") == "True":
            config.set_model_transaction_policy({"decoupled": True})
        return config

    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.decoupled = config.get("model_transaction_policy", {}).get("decoupled", False)

    def execute(self, requests):
        responses = []
        for request in requests:
            outputs = [pb_utils.Tensor(t.name().replace("input", "output"), t.as_numpy())
                       for t in request.inputs()]
            outputs.append(pb_utils.Tensor(
                "output_parameters", np.array([request.parameters()], dtype=np.object_)))
            response = pb_utils.InferenceResponse(output_tensors=outputs)
            if self.decoupled:
                sender = request.get_response_sender()
                sender.send(response)
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            else:
                responses.append(response)
        return None if self.decoupled else responses
'''

BROKEN_MODEL = '''
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        pb_utils.Logger.log_error("broken: the weights file is missing")
        raise pb_utils.TritonModelException("broken: cannot load weights.bin")

    def execute(self, requests):
        return []
'''

FAILING_MODEL = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse(error=pb_utils.TritonError("no thanks"))
                for _ in requests]
'''

FAILING_CONFIG = '''
name: "failing"
backend: "python"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] } ]
'''

# Triton's repeat backend: one response per IN element, DELAY[i] ms apart; stops when cancelled.
REPEAT_CONFIG = """
name: "repeat"
backend: "repeat"
max_batch_size: 0
model_transaction_policy { decoupled: True }
input [
  { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] },
  { name: "DELAY" data_type: TYPE_UINT32 dims: [ -1 ] },
  { name: "WAIT" data_type: TYPE_UINT32 dims: [ 1 ] }
]
output [
  { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "IDX" data_type: TYPE_UINT32 dims: [ 1 ] }
]
"""


def inprocess_repository(repo: Path) -> Path:
    """test (no config: loaded with one), add_sub, identity_fp32, repeat, failing, broken."""
    write_model(repo, "test", None, files={"1/model.py": ECHO_MODEL})
    shutil.copytree(PYTHON_MODELS / "repo" / "add_sub", repo / "add_sub")
    write_model(repo, "identity_fp32", identity_config("identity_fp32"))
    write_model(repo, "repeat", REPEAT_CONFIG)
    write_model(repo, "failing", FAILING_CONFIG, files={"1/model.py": FAILING_MODEL})
    write_model(repo, "broken", 'name: "broken"\nbackend: "python"\nmax_batch_size: 0\n'
                'input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
                'output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] } ]\n',
                files={"1/model.py": BROKEN_MODEL})
    return repo
