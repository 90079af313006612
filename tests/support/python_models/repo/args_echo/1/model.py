"""Answers, as JSON, the args initialize() got (model_config parsed), get_model_dir(), the
request's id, correlation id, flags, timeout, parameters and requested outputs, what
pb_utils.is_model_ready says of a few models, and what pb_utils.load_model says."""

import json

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.args = dict(args)
        self.args["model_config"] = json.loads(args["model_config"])
        self.args["get_model_dir"] = pb_utils.get_model_dir()
        pb_utils.Logger.log_info(f"args_echo instance {args['model_instance_name']} is ready")
        pb_utils.Logger.log_warn("args_echo warns")

    def execute(self, requests):
        responses = []
        for request in requests:
            seen = dict(self.args)
            seen["is_model_ready"] = {
                name: pb_utils.is_model_ready(name) for name in ("add_sub", "args_echo", "nope")
            }
            try:
                pb_utils.load_model("add_sub")
            except pb_utils.TritonModelException as exc:
                seen["load_model"] = str(exc)
            seen["request"] = {
                "id": request.request_id(),
                "correlation_id": request.correlation_id(),
                "flags": request.flags(),
                "timeout": request.timeout(),
                "parameters": json.loads(request.parameters()),
                "requested_output_names": sorted(request.requested_output_names()),
            }
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor("ARGS", np.array([json.dumps(seen).encode()], dtype=np.object_))],
                parameters={"answered_by": "args_echo"},
            ))
        return responses
