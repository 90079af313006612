"""The identity backend: OUTPUTn = INPUTn for any datatype, as Triton's identity backend.

It is the example backend authors copy: a ModelState that reads the configuration once, a
ModelInstanceState that writes only `execute`, and the entry points wiring them to the server.
Model parameter `execute_delay_ms` sleeps in every execute, to make load and batching visible.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from tritium.backend import (
    Model,
    ModelInstance,
    ModelInstanceState,
    ModelState,
    Request,
    TritonError,
)


class IdentityModelState(ModelState):
    def __init__(self, model: Model) -> None:
        super().__init__(model)
        self.delay_s = float(self.parameter("execute_delay_ms", "0") or 0) / 1000.0
        # INPUT3 -> OUTPUT3: outputs are matched to inputs by the index in their names.
        self.output_for_input = {
            name: "OUTPUT" + name[len("INPUT") :] for name in self.input_configs
        }
        unmatched = [o for o in self.output_for_input.values() if o not in self.output_configs]
        if unmatched:
            raise TritonError.invalid_arg(
                f"identity model '{self.name}' needs an output for each input; "
                f"missing {', '.join(unmatched)}"
            )


class IdentityInstanceState(ModelInstanceState):
    model_state: IdentityModelState

    def execute(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self.model_state.delay_s:
            time.sleep(self.model_state.delay_s)
        mapping = self.model_state.output_for_input
        return {mapping[name]: data for name, data in inputs.items()}


def model_initialize(model: Model) -> None:
    IdentityModelState.create(model)


def model_instance_initialize(instance: ModelInstance) -> None:
    IdentityInstanceState.create(instance)


def model_instance_execute(instance: ModelInstance, requests: Sequence[Request]) -> None:
    instance.state.process_requests(requests)
