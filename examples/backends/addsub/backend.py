"""An example custom backend, loaded from `--backend-directory examples/backends`.

It serves every model whose config says `backend: "addsub"`: OUTPUT0 = INPUT0 + INPUT1 and
OUTPUT1 = INPUT0 - INPUT1. Everything else (batching the requests, splitting the outputs,
per-request errors) comes from the helpers of the backend API.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tritium.backend import Backend, Model, ModelInstance, ModelInstanceState, ModelState, Request


class AddSubInstanceState(ModelInstanceState):
    def execute(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        a, b = inputs["INPUT0"], inputs["INPUT1"]
        return {"OUTPUT0": a + b, "OUTPUT1": a - b}


def initialize(backend: Backend) -> None:
    # --backend-config=addsub,<key>=<value> settings arrive here.
    backend.state = {"config": backend.config}


def model_initialize(model: Model) -> None:
    ModelState.create(model)


def model_instance_initialize(instance: ModelInstance) -> None:
    AddSubInstanceState.create(instance)


def model_instance_execute(instance: ModelInstance, requests: Sequence[Request]) -> None:
    instance.state.process_requests(requests)
