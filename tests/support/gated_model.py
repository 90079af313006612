"""`gated`: a Python identity model (FP32 INPUT0 -> OUTPUT0, batching) whose execute waits until
the test opens its gate (a file in the model's version folder), so a test acts while its
request is certainly in flight, however loaded the machine (`ServerProcess.wait_pending`
tells when the request has arrived).
"""

from __future__ import annotations

from pathlib import Path

from support.models import identity_config, write_model

_MODEL = '''
import os
import time
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.gate = os.path.join(args["model_repository"], args["model_version"], "gate")

    def execute(self, requests):
        deadline = time.monotonic() + 120
        while not os.path.exists(self.gate) and time.monotonic() < deadline:
            time.sleep(0.01)
        if os.path.exists(self.gate):
            os.remove(self.gate)
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())])
            for r in requests]
'''


def write_gated(repo: Path) -> Path:
    """Add `gated` to `repo`; the path of its gate (write it to let one execute go)."""
    config = identity_config("gated", extra="instance_group [{ kind: KIND_CPU }]")
    config = config.replace('backend: "identity"', 'backend: "python"')
    model = write_model(repo, "gated", config, files={"1/model.py": _MODEL})
    return model / "1" / "gate"
