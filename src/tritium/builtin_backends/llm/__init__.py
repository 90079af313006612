"""The llm backend: continuous-batching text generation, built as MindIE's Triton backend is.

Huawei MindIE's LLM backend for Triton (the project's fifth seed) does not run the model in
TRITONBACKEND_ModelInstanceExecute: `ModelInstanceState::Enqueue` turns each Triton request into
an engine request and an inference task, writes both into two queues the `ModelState` holds (the
request queue and the task map) and returns; the LLM manager's loop reads those queues, batches
at the iteration level and answers through decoupled responses. Here:

- `LlmModelState` (model_initialize): auto-completes the configuration (config.py), reads
  `model.json` (settings.py), opens the checkpoint (configuration, tokenizer) once
  (runner.py), creates the metrics (metrics.py), and holds the request queue, the task map and
  the weights, loaded once per device its instances run on;
- `LlmInstanceState` (model_instance_initialize): owns one Engine (engine.py), its KV slots
  and its thread, on the instance's device: `cuda:<device_id>` for a KIND_GPU instance, the
  CPU otherwise; `enqueue` makes an InferTask (task.py) per request and queues it;
- model_instance_execute calls `enqueue` and returns at once;
- the engine of every instance takes from the model's queue as it has room.

The interface is Triton's vLLM backend's (text_input, stream, sampling_parameters,
exclude_input_in_output -> text_output), so Triton's generate extension and gRPC streaming work
with it unchanged. torch and transformers are imported when the first llm model loads.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from tritium.backend import (
    Backend,
    Model,
    ModelInstance,
    ModelInstanceState,
    ModelState,
    Request,
    TritonError,
)

from ..framework import import_framework
from .config import complete_config, publish_max_model_len

log = logging.getLogger("tritium.backend.llm")


class LlmModelState(ModelState):
    """The model's loaded weights and tokenizer, its request queue and its task map."""

    def __init__(self, model: Model) -> None:
        complete_config(model)
        super().__init__(model)
        from .metrics import EngineMetrics
        from .runner import Checkpoint
        from .settings import read_settings

        self.settings = read_settings(model.version_path)
        with self._loading():
            self.checkpoint = Checkpoint.open(self.settings.model, self.settings.tokenizer,
                                              self.settings.max_model_len)
        publish_max_model_len(model, self.checkpoint.max_model_len)
        registry = getattr(model.server, "metrics", None)
        self.metrics = (EngineMetrics(registry, model.name, model.version,
                                      self.checkpoint.max_model_len)
                        if registry is not None else None)
        self._queue: collections.deque[Any] = collections.deque()
        self.tasks: dict[int, Any] = {}  # id(task) -> task, while queued or running
        self._ready = threading.Condition()
        self._runners: dict[Any, Any] = {}  # torch.device -> ModelRunner
        self._runners_lock = threading.Lock()

    @contextlib.contextmanager
    def _loading(self) -> Iterator[None]:
        """Reading the model's files: what goes wrong is the model's load error."""
        try:
            yield
        except (OSError, ValueError, KeyError) as exc:
            raise TritonError.invalid_arg(
                f"model '{self.model.name}': cannot load a Hugging Face model from "
                f"'{self.settings.model}': {exc}"
            ) from None

    def runner(self, device: Any) -> Any:
        """The model's weights on `device` (a torch.device), loaded by the first instance
        there; instances on one device share them."""
        import torch

        from .runner import ModelRunner

        with self._runners_lock:
            if device not in self._runners:
                try:
                    with self._loading():
                        self._runners[device] = ModelRunner.load(
                            self.checkpoint, self.settings.dtype, device)
                except torch.OutOfMemoryError as exc:
                    raise TritonError.unavailable(
                        f"model '{self.model.name}': its weights do not fit on {device}: {exc}"
                    ) from None
            return self._runners[device]

    def submit(self, tasks: list[Any]) -> None:
        with self._ready:
            for task in tasks:
                self.tasks[id(task)] = task
                self._queue.append(task)
            self._ready.notify_all()

    def take(self, limit: int, wait: float) -> list[Any]:
        """Up to `limit` queued tasks, waiting up to `wait` seconds for the first."""
        with self._ready:
            if not self._queue and wait > 0:
                self._ready.wait(wait)
            taken: list[Any] = []
            while self._queue and len(taken) < limit:
                taken.append(self._queue.popleft())
            return taken

    def waiting(self) -> int:
        return len(self._queue)

    def done(self, task: Any) -> None:
        with self._ready:
            self.tasks.pop(id(task), None)

    def drain(self) -> list[Any]:
        with self._ready:
            left = list(self._queue)
            self._queue.clear()
            return left

    def close(self) -> None:
        if self.metrics is not None:
            self.metrics.close()


class LlmInstanceState(ModelInstanceState):
    """One engine (thread, KV slots) taking from the model's queue."""

    model_state: LlmModelState

    def __init__(self, instance: ModelInstance) -> None:
        super().__init__(instance)
        from .engine import Engine
        from .runner import instance_device
        from .task import InferTask  # imported with the engine, not by the first request

        self._task = InferTask

        state = self.model_state
        try:
            device = instance_device(instance.kind, instance.device_id)
        except TritonError as exc:
            raise TritonError(exc.code, f"instance {instance.name}: {exc.message}") from None
        runner = state.runner(device)
        runner.warm_up()
        # The model state's queue is every instance engine's RequestSource.
        self.engine = Engine(instance.name, runner, state.settings, state, state.metrics)
        log.info("%s: llm engine on %s, weights in %s", instance.name, device,
                 str(runner.dtype).removeprefix("torch."))
        self.engine.start()

    def enqueue(self, requests: Sequence[Request]) -> None:
        """Each request as an InferTask in the model's queue (bad ones, and questions for the
        tokenizer, answered at once)."""
        from .prompt import answer_tokenizer_request

        checkpoint = self.model_state.checkpoint
        tasks = []
        for request in requests:
            try:
                if not answer_tokenizer_request(checkpoint, request):
                    tasks.append(self._task(request, checkpoint, self.model_state.done))
            except TritonError as exc:
                request.respond_error(exc)
            except Exception as exc:  # noqa: BLE001 - a bug fails this request, not the batch
                log.exception("%s: reading a request failed", self.model_state.model.name)
                request.respond_error(TritonError.internal(f"llm backend: {exc}"))
        if tasks:
            self.model_state.submit(tasks)

    def finalize(self) -> None:
        self.engine.stop()


def initialize(backend: Backend) -> None:
    for module in ("torch", "transformers"):
        import_framework(module, "llm", "llm")


def model_initialize(model: Model) -> None:
    LlmModelState.create(model)


def model_finalize(model: Model) -> None:
    state = model.state
    if isinstance(state, LlmModelState):
        for task in state.drain():
            task.on_error(TritonError.unavailable("the model is being unloaded"))
        state.close()


def model_instance_initialize(instance: ModelInstance) -> None:
    LlmInstanceState.create(instance)


def model_instance_finalize(instance: ModelInstance) -> None:
    if isinstance(instance.state, LlmInstanceState):
        instance.state.finalize()


def model_instance_execute(instance: ModelInstance, requests: Sequence[Request]) -> None:
    instance.state.enqueue(requests)
