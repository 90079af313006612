"""Helpers for backend authors: ModelState and ModelInstanceState.

`ModelInstanceState.process_requests` is the set-inputs -> execute -> read-outputs loop that
Triton's framework backends each write by hand: it gathers the requests' inputs into one batch,
calls `execute` once, splits the outputs back per request and sends each request its response
(or its own error). A backend subclasses and writes only `execute`; one whose model runs on a
device also writes `inputs_to_device` and `outputs_to_host`, so that the copies count as compute
input and compute output in the statistics, and compute infer is the model's own time (as in
Triton's framework backends).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from tritonclient.grpc import model_config_pb2 as mc

from ..errors import TritonError, as_triton_error
from ..request import RESPONSE_COMPLETE_FINAL, InferenceRequest, InferenceResponse
from ..tensor import Tensor, numpy_dtype, wire_datatype
from .batch_input import batch_inputs, gather_ragged
from .batch_output import BatchOutputs
from .handles import Model, ModelInstance

log = logging.getLogger("tritium.backend")


class ModelState:
    """Backend-side state of one model version, attached as `model.state`."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.name = model.name
        self.config: mc.ModelConfig = model.config
        self.max_batch_size = model.config.max_batch_size
        self.input_configs = {i.name: i for i in model.config.input}
        self.output_configs = {o.name: o for o in model.config.output}
        # Inputs whose requests are concatenated flattened (batch_input.py).
        self.ragged_inputs = frozenset(i.name for i in model.config.input if i.allow_ragged_batch)
        self.batch_outputs = BatchOutputs(model.config)

    def parameter(self, key: str, default: str | None = None) -> str | None:
        """A `parameters { key: ... value: { string_value: ... } }` entry of the config."""
        entry = self.config.parameters.get(key)
        return entry.string_value if entry is not None else default

    @classmethod
    def create(cls, model: Model) -> ModelState:
        state = cls(model)
        model.state = state
        return state


class ModelInstanceState:
    """Backend-side state of one instance, attached as `instance.state`."""

    def __init__(self, instance: ModelInstance) -> None:
        self.instance = instance
        self.model_state: ModelState = instance.model.state
        # The outputs some request of the batch being executed asked for (empty: all), so a
        # framework backend can skip computing the others.
        self.requested_outputs: frozenset[str] = frozenset()

    @classmethod
    def create(cls, instance: ModelInstance) -> ModelInstanceState:
        state = cls(instance)
        instance.state = state
        return state

    def inputs_to_device(self, inputs: dict[str, np.ndarray]) -> dict[str, Any]:
        """The batch's inputs where `execute` takes them; done when this returns. The host
        arrays themselves unless the backend overrides it."""
        return inputs

    def execute(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Run the model on one batch; return every output by name, the work finished."""
        raise NotImplementedError

    def outputs_to_host(self, outputs: dict[str, Any]) -> dict[str, np.ndarray]:
        """`execute`'s outputs as host arrays (they are unless the backend overrides this)."""
        return outputs

    def process_requests(self, requests: Sequence[InferenceRequest]) -> None:
        batching = self.model_state.max_batch_size > 0
        groups = [list(requests)] if batching else [[r] for r in requests]
        for group in groups:
            self._process_batch(group)

    def _process_batch(self, requests: list[InferenceRequest]) -> None:
        requests = [r for r in requests if self._check_inputs(r)]
        if not requests:
            return
        try:  # shapes that cannot be concatenated, a device out of memory, etc.
            inputs = self.inputs_to_device(self._gather_inputs(requests))
        except Exception as exc:
            self._fail(requests, as_triton_error(exc))
            return
        mark = time.perf_counter_ns()
        for request in requests:
            request.compute_input_end_ns = mark
        self.requested_outputs = _requested_outputs(requests)
        try:
            outputs = self.execute(inputs)
        except Exception as exc:
            self._fail(requests, as_triton_error(exc))
            return
        mark = time.perf_counter_ns()
        for request in requests:
            request.compute_output_start_ns = mark
        try:
            host_outputs = self.outputs_to_host(outputs)
        except Exception as exc:
            self._fail(requests, as_triton_error(exc))
            return
        self._scatter_outputs(requests, host_outputs)

    def _check_inputs(self, request: InferenceRequest) -> bool:
        missing = [n for n in self.model_state.input_configs if n not in request.inputs]
        missing = [n for n in missing if not self.model_state.input_configs[n].optional]
        if missing:
            request.respond_error(
                TritonError.invalid_arg(
                    f"model '{self.model_state.name}' is missing input(s) {', '.join(missing)}"
                )
            )
            return False
        return True

    def _gather_inputs(self, requests: list[InferenceRequest]) -> dict[str, np.ndarray]:
        """The batch's inputs: stacked along the batch dimension, ragged ones flattened, and the
        configured batch inputs."""
        model = self.model_state
        inputs: dict[str, np.ndarray] = {}
        for name in requests[0].inputs:
            if name in model.ragged_inputs:
                inputs[name] = gather_ragged(name, requests)
            elif len(requests) == 1:
                inputs[name] = requests[0].inputs[name].data
            else:
                inputs[name] = np.concatenate([r.inputs[name].data for r in requests])
        inputs.update(batch_inputs(model.config, requests))
        return inputs

    def _scatter_outputs(
        self, requests: list[InferenceRequest], outputs: dict[str, np.ndarray]
    ) -> None:
        parts = self._split_outputs(requests, outputs)
        for index, request in enumerate(requests):
            wanted = request.requested_output_names or list(outputs)
            response = InferenceResponse()
            for name in wanted:
                part = parts[name][index] if name in parts else TritonError.internal(
                    f"backend of model '{self.model_state.name}' produced no output '{name}'"
                )
                if isinstance(part, TritonError):
                    response = InferenceResponse(error=part)
                    break
                response.outputs.append(self._tensor(name, part))
            request.respond(response)

    def _split_outputs(
        self, requests: list[InferenceRequest], outputs: dict[str, np.ndarray]
    ) -> dict[str, list[np.ndarray | TritonError]]:
        """Each output cut into the requests' parts: along the batch dimension by each
        request's batch size, a batch output by its source input's shape (batch_output.py)."""
        batch_outputs = self.model_state.batch_outputs
        batching = self.model_state.max_batch_size > 0
        sizes = [_batch_size(r) for r in requests] if batching else None
        parts: dict[str, list[np.ndarray | TritonError]] = {}
        for name, output in outputs.items():
            if name in batch_outputs:
                parts[name] = batch_outputs.scatter(name, output, requests)
            elif sizes is None:
                parts[name] = [output for _ in requests]
            else:
                bounds = np.cumsum([0, *sizes])
                parts[name] = [output[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        return parts

    def _tensor(self, name: str, data: np.ndarray) -> Tensor:
        config = self.model_state.output_configs.get(name)
        if config is None:
            return Tensor.from_numpy(name, np.asarray(data))
        wire = wire_datatype(config.data_type)
        return Tensor(name, wire, tuple(data.shape), np.asarray(data, dtype=numpy_dtype(wire)))

    @staticmethod
    def _fail(requests: list[InferenceRequest], error: TritonError) -> None:
        for request in requests:
            request.respond_error(error)


class DecoupledInstanceState(ModelInstanceState):
    """For decoupled backends: each request is answered by a thread of its own.

    `stream(request, responses)` runs the `responses` generator on a new thread, sends what it
    yields, then the final flag on its own (TRITONBACKEND_ResponseFactorySendFlags), so execute
    returns at once; `finalize` waits for the threads still answering, as Triton's example
    backends do in their destructors.
    """

    def __init__(self, instance: ModelInstance) -> None:
        super().__init__(instance)
        self._threads: set[threading.Thread] = set()
        self._lock = threading.Lock()

    def stream(
        self, request: InferenceRequest, responses: Callable[[], Iterator[InferenceResponse]]
    ) -> None:
        thread = threading.Thread(
            target=self._send_all, args=(request, responses),
            name=f"{self.instance.name}-responses", daemon=True,
        )
        with self._lock:
            self._threads.add(thread)
        thread.start()

    def _send_all(
        self, request: InferenceRequest, responses: Callable[[], Iterator[InferenceResponse]]
    ) -> None:
        sender = request.response_sender
        assert sender is not None
        try:
            for response in responses():
                sender.send(response, 0)
            sender.send(None, RESPONSE_COMPLETE_FINAL)
        except Exception:  # the server went away under us (shutdown): nothing left to tell
            log.debug("%s: sending a response failed", self.instance.name, exc_info=True)
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())

    def finalize(self) -> None:
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join()


def _requested_outputs(requests: list[InferenceRequest]) -> frozenset[str]:
    names: set[str] = set()
    for request in requests:
        if not request.requested_output_names:
            return frozenset()
        names.update(request.requested_output_names)
    return frozenset(names)


def _batch_size(request: InferenceRequest) -> int:
    first = next(iter(request.inputs.values()), None)
    return first.shape[0] if first is not None and first.shape else 1
