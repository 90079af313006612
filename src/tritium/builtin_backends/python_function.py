"""The python_function backend: models whose execute is a Python callable of this process.

PyTriton's shape (`Triton().bind(model_name, infer_func, ...)`, tritium.inprocess.pytriton)
registers a callable under a key and generates a configuration naming this backend with
parameter `callable_id` = that key. Each instance of the model takes the next callable of the
list bound (one per instance, as PyTriton's list of infer functions), and runs on its own
instance thread, as every in-process backend does; the dynamic batcher hands it several requests
at once.

A callable takes the batch's requests and returns one `{output name: array}` per request, or,
for a decoupled model, yields such lists as many times as it has responses to send. Arrays are
cast to the configured output datatypes; an exception fails the batch's requests with its
message.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from tritium.backend import (
    RESPONSE_COMPLETE_FINAL,
    InferenceResponse,
    Model,
    ModelInstance,
    ModelState,
    Request,
    ResponseSender,
    Tensor,
    TritonError,
)
from tritium.errors import as_triton_error
from tritium.tensor import numpy_dtype, wire_datatype

Serve = Callable[[Sequence[Request]], Any]

_registry: dict[str, list[Serve]] = {}
_registry_lock = threading.Lock()


def register(key: str, callables: Sequence[Serve]) -> None:
    """Make `callables` (one per instance) what models with `callable_id: key` run."""
    with _registry_lock:
        _registry[key] = list(callables)


def unregister(key: str) -> None:
    with _registry_lock:
        _registry.pop(key, None)


class FunctionModelState(ModelState):
    def __init__(self, model: Model) -> None:
        super().__init__(model)
        key = self.parameter("callable_id", "")
        with _registry_lock:
            callables = _registry.get(key or "")
        if not callables:
            raise TritonError.invalid_arg(
                f"model '{self.name}': no Python callable is registered under callable_id "
                f"'{key}' (python_function models are created by binding a function)"
            )
        self.callables = callables
        self._next = itertools.count()
        self.decoupled = self.config.model_transaction_policy.decoupled

    def next_callable(self) -> Serve:
        return self.callables[next(self._next) % len(self.callables)]


class FunctionInstanceState:
    def __init__(self, instance: ModelInstance) -> None:
        self.model_state: FunctionModelState = instance.model.state
        self.serve = self.model_state.next_callable()

    def execute(self, requests: Sequence[Request]) -> None:
        state = self.model_state
        try:
            result = self.serve(requests)
            if state.decoupled:
                for partial in result:
                    self._respond(requests, partial, 0)
                for request in requests:
                    _sender(request).send(None, RESPONSE_COMPLETE_FINAL)
            else:
                self._respond(requests, result, RESPONSE_COMPLETE_FINAL)
        except Exception as exc:  # noqa: BLE001 (the user's function: any failure is the requests')
            error = as_triton_error(exc)
            for request in requests:
                sender = request.response_sender
                if sender is not None and not sender.is_completed:
                    sender.send(InferenceResponse(error=error), RESPONSE_COMPLETE_FINAL)

    def _respond(self, requests: Sequence[Request], results: Iterable[dict[str, Any]],
                 flags: int) -> None:
        results = list(results)
        if len(results) != len(requests):
            raise TritonError.internal(
                f"model '{self.model_state.name}': the function returned {len(results)} "
                f"results for {len(requests)} requests"
            )
        for request, outputs in zip(requests, results, strict=True):
            wanted = request.requested_output_names or list(outputs)
            response = InferenceResponse(outputs=[self._tensor(n, outputs[n]) for n in wanted
                                                  if n in outputs])
            _sender(request).send(response, flags)

    def _tensor(self, name: str, data: Any) -> Tensor:
        config = self.model_state.output_configs.get(name)
        if config is None:
            raise TritonError.internal(
                f"model '{self.model_state.name}': the function returned output '{name}', "
                "which the model does not declare"
            )
        wire = wire_datatype(config.data_type)
        array = np.asarray(data)
        if wire == "BYTES":
            flat = [item if isinstance(item, bytes) else str(item).encode("utf-8")
                    for item in array.reshape(-1).tolist()]
            out = np.empty(len(flat), np.object_)
            out[:] = flat
            array = out.reshape(array.shape)
        else:
            array = array.astype(numpy_dtype(wire), copy=False)
        return Tensor(name, wire, tuple(array.shape), array)


def _sender(request: Request) -> ResponseSender:
    sender = request.response_sender
    assert sender is not None, "the server routes every request it hands a backend"
    return sender


def model_initialize(model: Model) -> None:
    FunctionModelState.create(model)


def model_instance_initialize(instance: ModelInstance) -> None:
    instance.state = FunctionInstanceState(instance)


def model_instance_execute(instance: ModelInstance, requests: Sequence[Request]) -> None:
    instance.state.execute(requests)
