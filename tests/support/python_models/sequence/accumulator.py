"""A stateful test model: OUTPUT is the running sum of INPUT over a sequence.

The sum is kept per batch position ("slot", what the direct strategy promises: a sequence keeps
its position) or per correlation id ("corrid", for the oldest strategy), as configured by the
parameter `key`. INFO (one JSON string per request) reports what the model saw: correlation id,
flags, every control input, the batch size and the instance, so tests can check the scheduler.
With inputs STATE_IN/outputs STATE_OUT configured as implicit state, the model adds INPUT to the
state the server keeps instead of its own sum. Parameter `delay_ms` makes each execute slow.
"""

import json
import time

import numpy as np

import triton_python_backend_utils as pb_utils

CONTROLS = ("START", "END", "READY", "CORRID")


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = config.get("parameters", {})
        self.key = params.get("key", {}).get("string_value", "slot")
        self.instance = args["model_instance_name"]
        self.sums = {}
        self.delay_s = float(params.get("delay_ms", {}).get("string_value", "0")) / 1000.0

    def execute(self, requests):
        time.sleep(self.delay_s)
        responses = []
        for position, request in enumerate(requests):
            value = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            controls = {}
            for name in CONTROLS:
                tensor = pb_utils.get_input_tensor_by_name(request, name)
                if tensor is not None:
                    item = tensor.as_numpy().reshape(-1)[0]
                    controls[name] = item.decode() if isinstance(item, bytes) else item.item()
            ready = controls.get("READY", 1)
            start = controls.get("START", request.flags() & 1)
            state = pb_utils.get_input_tensor_by_name(request, "STATE_IN")
            outputs = []
            if state is not None:
                total = state.as_numpy() + value
                outputs.append(pb_utils.Tensor("STATE_OUT", total.astype(np.int32)))
            else:
                key = position if self.key == "slot" else request.correlation_id()
                if start:
                    self.sums[key] = np.zeros_like(value)
                total = self.sums.get(key, np.zeros_like(value))
                if ready:
                    total = total + value
                    self.sums[key] = total
            info = {
                "corrid": request.correlation_id(),
                "flags": request.flags(),
                "controls": controls,
                "position": position,
                "batch": len(requests),
                # Every request's INPUT shape in this execution (null requests' too).
                "shapes": [list(pb_utils.get_input_tensor_by_name(r, "INPUT").as_numpy().shape)
                           for r in requests],
                "instance": self.instance,
            }
            outputs.append(pb_utils.Tensor("OUTPUT", total.astype(np.int32)))
            outputs.append(pb_utils.Tensor(
                "INFO", np.array([json.dumps(info).encode()] * value.shape[0], dtype=object)
                .reshape(value.shape[:-1] + (1,))))
            responses.append(pb_utils.InferenceResponse(outputs))
        return responses
