"""The python backend's entry points (Triton's python_be.cc): the package's assembler, which
imports its modules and is imported by none of them.

The backend-wide settings are a `BackendState` (`backend_state.py`). Each model gets a
`PythonModelState` (`model_state.py`: its model.py, its interpreter; `auto_complete.py` runs its
`auto_complete_config`), each instance an `InstanceState` (`instance_state.py`: its stub process,
restarted when it dies). Execute hands a batch to the instance's stub (`process_requests.py`);
whatever the stub sends on its own arrives on the stub's async channel (`async_channel.py`).
"""

from __future__ import annotations

from collections.abc import Sequence

from tritium.backend import (
    Backend,
    BackendAttributes,
    InferenceRequest,
    Model,
    ModelInstance,
)

from .auto_complete import auto_complete, may_auto_complete
from .backend_state import BackendState
from .instance_state import InstanceState
from .model_state import PythonModelState


def initialize(backend: Backend) -> None:
    backend.state = BackendState(backend)


def get_backend_attribute(backend: Backend, attributes: BackendAttributes) -> None:
    # Each instance is its own process: starting them together is safe and faster.
    attributes.set_parallel_model_instance_loading(True)


def finalize(backend: Backend) -> None:
    backend.state = None


def model_initialize(model: Model) -> None:
    state = PythonModelState(model, model.backend.state)
    model.state = state
    if not model.auto_complete:
        return
    # Triton's python backend always gives the configuration back when auto-completing (a
    # model with no file of its own counts as configured), completed by the model's
    # auto_complete_config where it has one.
    completed = auto_complete(state) if may_auto_complete(state.model_path) else None
    if completed is not None:
        model.set_config_json(completed)
    else:
        model.set_config(model.config)


def model_finalize(model: Model) -> None:
    state = model.state
    if isinstance(state, PythonModelState):
        state.close()
    model.state = None


def model_instance_initialize(instance: ModelInstance) -> None:
    state = InstanceState(instance, instance.model.state)
    state.stub = state.launch()
    instance.state = state


def model_instance_execute(instance: ModelInstance, requests: Sequence[InferenceRequest]) -> None:
    instance.state.execute(requests)


def model_instance_execute_each(instance: ModelInstance,
                                requests: Sequence[InferenceRequest]) -> None:
    """Each request its own execution, in order, in one exchange with the stub: requests
    queued for an instance with no batcher cost one wake-up of the stub and of this thread
    between them, not one each."""
    instance.state.execute(requests, each=True)


def model_instance_ready(instance: ModelInstance) -> bool:
    state = instance.state
    return state is not None and state.is_ready()


def model_instance_finalize(instance: ModelInstance) -> None:
    state = instance.state
    if state is not None:
        state.close()
    instance.state = None
