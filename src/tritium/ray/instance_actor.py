"""One model instance as a Ray actor: the backend's instance, run as it runs locally.

The actor is a small Tritium backend host: it finds the model's backend by name as the server
does (BackendManager: --backend-directory, entry points, built-ins), and calls the same backend
API Triton defines (model_initialize, model_instance_initialize, model_instance_execute, ...).
So a Python-backend model runs its TritonPythonModel in a stub process beside the actor with
the full pb_utils, and an onnxruntime or pytorch model opens its session here. What the backend
asks of its server (`model.server`) goes back to the owning Tritium (`owner_link.py`).

Responses of an ordinary model come back with execute's return (it must answer before
returning); a decoupled model's stream on `events`, in the order the model sent them.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray
from tritonclient.grpc import model_config_pb2 as mc

from ..backend.handles import Model as ModelHandle
from ..backend.handles import ModelInstance as InstanceHandle
from ..backend.manager import BackendManager, LoadedBackend
from ..errors import TritonError
from ..request import InferenceResponse, ResponseSender
from . import wire
from .owner_link import LogForwarder, OwnerLink, OwnerServer, RemoteRequest

# Ray concurrency groups: the owner's stream and the owner's answers each keep their order;
# execute, readiness and finalize may overlap (a readiness check during a long execute).
CONCURRENCY_GROUPS = {"events": 1, "owner": 1}
MAX_CONCURRENCY = 4


@dataclass
class InstanceSpec:
    """Everything an actor needs to build its instance (picklable)."""

    model: str
    backend: str
    backend_directories: list[str]
    backend_config: dict[str, dict[str, str]]
    config: bytes  # the model's final ModelConfig
    version: int
    repository_path: str
    instance_name: str
    kind: str
    device_id: int
    group: bytes  # its ModelInstanceGroup
    log_level: int = logging.INFO


class InstanceActor:
    def __init__(self, spec: InstanceSpec) -> None:
        self._spec = spec
        self._link = OwnerLink()
        self._server = OwnerServer(self._link)
        self._backends: BackendManager | None = None
        self._loaded: LoadedBackend | None = None
        self._model: ModelHandle | None = None
        self._instance: InstanceHandle | None = None
        self._model_name = spec.model
        self._decoupled = False
        self._lock = threading.Lock()

    def start(self) -> tuple[str, Any]:
        """Build the model and the instance; ("ok", (node id, pid)) or ("error", error)."""
        try:
            self._forward_logs()
            self._start()
        except BaseException as exc:
            self._teardown()
            return "error", wire.error_to_wire(exc)
        return "ok", self.where()

    def _forward_logs(self) -> None:
        logger = logging.getLogger("tritium")
        logger.handlers = [LogForwarder(self._link, self._spec.instance_name)]
        logger.setLevel(self._spec.log_level)
        logger.propagate = False

    def _start(self) -> None:
        spec = self._spec
        path = Path(spec.repository_path)
        if not path.is_dir():
            raise TritonError.unavailable(
                f"model directory '{path}' is not on Ray node "
                f"{ray.get_runtime_context().get_node_id()}: every node needs the model "
                "repository at the same path (a shared or synced filesystem)"
            )
        config = mc.ModelConfig.FromString(spec.config)
        self._decoupled = config.model_transaction_policy.decoupled
        self._backends = BackendManager(
            [Path(d) for d in spec.backend_directories], spec.backend_config,
            server=self._server,  # type: ignore[arg-type]
        )
        self._loaded = self._backends.acquire(spec.backend, runtime=config.runtime,
                                              model_name=config.name)
        library = self._loaded.library
        model = ModelHandle(self._loaded.handle, config, spec.version, path,
                            auto_complete=False, server=self._server)  # type: ignore[arg-type]
        library.model_initialize(model)
        model._finish_initialization()
        self._model = model
        instance = InstanceHandle(model, spec.instance_name, spec.kind, _device_id(spec),
                                  mc.ModelInstanceGroup.FromString(spec.group))
        library.model_instance_initialize(instance)
        self._instance = instance

    @ray.method(concurrency_group="events")
    def events(self) -> Iterator[list[tuple]]:
        """What the instance sends its owner on its own, batched per streamed item; ends
        when the instance is finalized."""
        while True:
            first = self._link.events.get()
            if first is None:
                return
            batch = self._link.drain(first)
            if batch:
                yield batch

    def execute(self, batch: list[wire.RequestWire]) -> tuple[Any, list[tuple]]:
        """Run the backend's execute on `batch`: (error or None, [(key, response, flags)])
        for an ordinary model's responses; a decoupled model's go on `events`."""
        assert self._instance is not None and self._loaded is not None
        spec = self._spec
        answered: list[tuple] = []
        requests = []
        for item in batch:
            key, request = wire.request_from_wire(item, self._model_name,
                                                  spec.version, RemoteRequest)
            request.bind(self._link, key)  # type: ignore[attr-defined]
            request.response_sender = ResponseSender(self._sender(key, answered))
            requests.append(request)
        try:
            self._loaded.library.model_instance_execute(self._instance, requests)
        except BaseException as exc:
            return wire.error_to_wire(exc), answered
        return None, answered

    def _sender(self, key: int, answered: list[tuple]) -> Any:
        if self._decoupled:
            post = self._link.post

            def deliver(response: InferenceResponse | None, flags: int) -> None:
                post("response", key, wire.response_to_wire(response), flags)
        else:
            def deliver(response: InferenceResponse | None, flags: int) -> None:
                answered.append((key, wire.response_to_wire(response), flags))
        return deliver

    @ray.method(concurrency_group="owner")
    def reply(self, call_id: int, error: wire.ErrorWire | None, value: Any) -> None:
        self._link.reply(call_id, error, value)

    @ray.method(concurrency_group="owner")
    def deliver(self, bls_id: int, response: wire.ResponseWire | None, flags: int) -> None:
        self._server.deliver(bls_id, response, flags)

    def where(self) -> tuple[str, int]:
        """(Ray node id, process id) of this instance, for operators and tests."""
        return ray.get_runtime_context().get_node_id(), os.getpid()

    def ready(self) -> bool:
        if self._instance is None or self._loaded is None:
            return False
        try:
            return bool(self._loaded.library.model_instance_ready(self._instance))
        except Exception:
            return False

    def finalize(self) -> None:
        """Finalize instance, model and backend, then end the owner's stream."""
        self._teardown()
        self._link.close()

    def _teardown(self) -> None:
        with self._lock:
            instance, self._instance = self._instance, None
            model, self._model = self._model, None
            loaded, self._loaded = self._loaded, None
        log = logging.getLogger("tritium.ray")
        if loaded is not None:
            try:
                if instance is not None:
                    loaded.library.model_instance_finalize(instance)
            except Exception:
                log.exception("finalizing instance '%s' failed", self._spec.instance_name)
            try:
                if model is not None:
                    loaded.library.model_finalize(model)
            except Exception:
                log.exception("finalizing model '%s' failed", self._spec.model)
            assert self._backends is not None
            self._backends.release(loaded)


def _device_id(spec: InstanceSpec) -> int:
    """The instance's device as this actor sees it: Ray limits a GPU actor's CUDA_VISIBLE_DEVICES
    to the GPUs it granted, so the owner's device id (a GPU of the owner's machine) becomes the
    actor's first visible device."""
    if spec.kind == "KIND_GPU" and ray.get_gpu_ids():
        return 0
    return spec.device_id
