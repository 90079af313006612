"""The python backend's entry points (Triton's python_be.cc) and its backend-wide settings.

Each model gets a `PythonModelState` (`model_state.py`: its model.py, its interpreter), each
instance an `InstanceState` (`instance_state.py`: its stub process, restarted when it dies). Execute
hands a batch to the instance's stub (`process_requests.py`); whatever the stub sends on its
own arrives on the stub's async channel (`async_channel.py`).
"""

from __future__ import annotations

from collections.abc import Sequence

from tritium.backend import (
    Backend,
    BackendAttributes,
    InferenceRequest,
    Model,
    ModelInstance,
    TritonError,
)

from .custom_metrics import FamilyRegistry
from .instance_state import InstanceState
from .model_state import PythonModelState, auto_complete, may_auto_complete

_DEFAULT_RING_BYTES = 4 * 1024 * 1024
_MIN_RING_BYTES = 64 * 1024
_DEFAULT_STUB_TIMEOUT_S = 30.0


class BackendState:
    """The `--backend-config=python,...` settings, and what the backend's models share."""

    def __init__(self, backend: Backend) -> None:
        config = backend.config
        self.ring_bytes = max(
            _int_setting(config, "shm-default-byte-size", _DEFAULT_RING_BYTES), _MIN_RING_BYTES
        )
        self.stub_timeout_s = float(
            _int_setting(config, "stub-timeout-seconds", int(_DEFAULT_STUB_TIMEOUT_S))
        )
        self.region_prefix = config.get(
            "shm-region-prefix-name", "tritium_python_backend_shm_region"
        )
        # A Python-based backend: DIR/<name>/model.py serves every model naming the backend.
        directory = backend.directory
        self.backend_model = (
            directory / "model.py"
            if directory is not None and (directory / "model.py").is_file()
            else None
        )
        self.metric_families = FamilyRegistry()


def _int_setting(config: dict[str, str], key: str, default: int) -> int:
    value = config.get(key)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise TritonError.invalid_arg(
            f"backend config '{key}' must be an integer, got '{value}'"
        ) from None


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
    if model.auto_complete and may_auto_complete(state.model_path):
        completed = auto_complete(state)
        if completed is not None:
            model.set_config_json(completed)


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
