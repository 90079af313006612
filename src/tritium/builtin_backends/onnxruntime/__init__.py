"""The onnxruntime backend: ONNX models (`model.onnx`, `platform: "onnxruntime_onnx"`) run by
ONNX Runtime, one `InferenceSession` per instance, as Triton's onnxruntime backend: a KIND_GPU
instance's on the CUDA provider of its device (after TensorRT's when the configuration's
execution accelerators ask for it), any other on the CPU (providers.py, accelerators.py).

The model state reads the configuration once (session options, auto-complete from the graph);
each instance opens its session and checks the configuration against the model; execution is
the backend API's gather -> run -> scatter, so a batch of requests is one `session.run` (which
copies the inputs to the GPU and the outputs back, for a CUDA session). An onnxruntime without
the CUDA provider makes models that configure no instance group KIND_CPU even on a machine with
GPUs (the backend's preferred group, as Triton's CPU-only build of the backend prefers).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from tritonclient.grpc import model_config_pb2 as mc

from tritium.backend import (
    Backend,
    BackendAttributes,
    Model,
    ModelInstance,
    ModelInstanceState,
    ModelState,
    Request,
)

from ..framework import (
    TritonBackendLog,
    import_framework,
    op_libraries,
    parse_int,
    utf8_strings,
)
from ..sequence_io import SequenceTensors
from .autocomplete import auto_complete, needs_auto_complete
from .providers import check_session, has_cuda, session_providers
from .session import SessionFactory, SessionInfo, model_path, ort_error, share_sessions
from .validate import validate_io

log = logging.getLogger("tritium.backend.onnxruntime")


class OnnxModelState(ModelState):
    def __init__(self, model: Model) -> None:
        self.ort = model.backend.state
        if model.auto_complete and needs_auto_complete(model.config):
            self._auto_complete(model)
        super().__init__(model)
        self.sessions = SessionFactory(self.ort, self.config, op_libraries(model))
        self._share = share_sessions(self.config)
        self._group_sessions: dict[tuple[str, int], Any] = {}  # (group, device) -> session
        self._lock = threading.Lock()

    def _auto_complete(self, model: Model) -> None:
        config = mc.ModelConfig()
        config.CopyFrom(model.config)
        session = SessionFactory(self.ort, config, op_libraries(model)).create(model_path(model))
        default = model.backend.config.get("default-max-batch-size", "0")
        auto_complete(
            config,
            SessionInfo.of(session),
            parse_int("default-max-batch-size", default),
            SequenceTensors.of(config),
        )
        model.set_config(config)

    def session_for(self, instance: ModelInstance) -> Any:
        """A new session on the instance's device, or with `share_session_between_instances`
        the one its group has there."""
        if not self._share:
            return self._create(instance)
        key = (instance.group.name, instance.device_id)
        with self._lock:
            session = self._group_sessions.get(key)
            if session is None:
                session = self._group_sessions[key] = self._create(instance)
            return session

    def _create(self, instance: ModelInstance) -> Any:
        providers = session_providers(self.ort, instance)
        session = self.sessions.create(model_path(self.model), providers)
        check_session(self.ort, session, instance, providers)
        return session


class OnnxInstanceState(ModelInstanceState):
    model_state: OnnxModelState

    def __init__(self, instance: ModelInstance) -> None:
        super().__init__(instance)
        self.session = self.model_state.session_for(instance)
        config = instance.model.config
        info = SessionInfo.of(self.session)
        validate_io(config, info)
        self._run_options = self.model_state.sessions.run_options
        # The state outputs are run too: the sequence batcher asks for them on every request
        # and keeps them as the sequence's next state (never returned to the client).
        sequence = SequenceTensors.of(config)
        self._output_names = [o.name for o in config.output] + [
            s.output_name for s in sequence.states
        ]
        # Scalars travel as shape [1] (plus the batch dimension) and run with shape [].
        self._scalar_inputs = {n for n, t in info.inputs.items() if not t.dims}
        self._string_inputs = {i.name for i in config.input if i.data_type == mc.TYPE_STRING}
        self._string_inputs.update(sequence.string_inputs)
        self._output_dims = {
            o.name: tuple(o.dims) for o in config.output if not info.outputs[o.name].dims
        }

    def execute(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        feeds = {name: self._feed(name, data) for name, data in inputs.items()}
        wanted = self.requested_outputs
        names = [n for n in self._output_names if not wanted or n in wanted]
        try:
            results = self.session.run(names, feeds, self._run_options)
        except Exception as exc:
            raise ort_error(exc) from None
        return {name: self._output(name, value) for name, value in zip(names, results, strict=True)}

    def _feed(self, name: str, data: np.ndarray) -> np.ndarray:
        if name in self._string_inputs:
            data = np.array(utf8_strings(name, data, "ONNX Runtime"), dtype=np.object_).reshape(
                data.shape
            )
        if name in self._scalar_inputs:
            data = data.reshape(())
        return data

    def _output(self, name: str, value: np.ndarray) -> np.ndarray:
        if value.dtype == np.object_:  # ONNX strings come back as str
            value = np.array([s.encode("utf-8") for s in value.flat], dtype=np.object_).reshape(
                value.shape
            )
        dims = self._output_dims.get(name)
        if dims is not None:
            value = value.reshape(dims)
        return value


# Triton's onnxruntime backend logs its configuration itself (at INFO).
LOGS_CONFIGURATION = True
_lines = TritonBackendLog(log)


def initialize(backend: Backend) -> None:
    _lines.initialize(backend)
    backend.state = import_framework("onnxruntime", "onnxruntime", "onnxruntime")


def get_backend_attribute(backend: Backend, attributes: BackendAttributes) -> None:
    ort = backend.state
    if not has_cuda(ort):
        log.info(
            "onnxruntime %s has no CUDAExecutionProvider: onnxruntime models without an "
            "instance_group run on the CPU", ort.__version__,
        )
        attributes.add_preferred_instance_group("KIND_CPU")
    # Sessions are independent: instances may open theirs concurrently, as in Triton.
    attributes.set_parallel_model_instance_loading(True)


def model_initialize(model: Model) -> None:
    _lines.model_initialize(model)
    OnnxModelState.create(model)


def model_finalize(model: Model) -> None:
    _lines.model_finalize()


def model_instance_initialize(instance: ModelInstance) -> None:
    _lines.instance_initialize(instance)
    OnnxInstanceState.create(instance)


def model_instance_finalize(instance: ModelInstance) -> None:
    _lines.instance_finalize()


def model_instance_execute(instance: ModelInstance, requests: Sequence[Request]) -> None:
    _lines.execute(instance, len(requests))
    instance.state.process_requests(requests)
