"""The ensemble scheduler (Triton's EnsembleScheduler and EnsembleContext).

An ensemble request runs as a data flow: each step is an inference request to its composing
model, routed through the server like any client's, and starts as soon as every tensor it reads
exists. Steps whose inputs are ready together start together, so independent branches run in
parallel. A decoupled step may answer many times; each answer is one "iteration" of its output
tensors and drives the steps after it once more, and each complete set of requested outputs
becomes one response of the ensemble. The first error of any step fails the request, with the
step's message, once no step is in flight any more.

No thread of its own: everything happens on the callbacks of the composing models' responses,
under one lock per request; the steps are submitted outside it, so a composing model that
answers at once (an error, a nested ensemble) cannot deadlock.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any, Protocol

from tritonclient.grpc import model_config_pb2 as mc

from ..errors import TritonError, as_triton_error
from ..request import (
    RESPONSE_COMPLETE_FINAL,
    SEQUENCE_END,
    SEQUENCE_START,
    Deliver,
    InferenceRequest,
    InferenceResponse,
    RequestedOutput,
    log_prefix,
)
from ..tensor import Tensor
from .ensemble_plan import EnsemblePlan, reshape_dims

if TYPE_CHECKING:
    from ..statistics import ModelStatistics

log = logging.getLogger("tritium.ensemble")


class EnsembleServer(Protocol):
    """What an ensemble asks of the server: the two calls Triton's EnsembleScheduler makes on
    its InferenceServer (InferAsync for each step, GetModel for a composing model's config).
    The InferenceServer is one; a narrow handle keeps the scheduler below the server."""

    def infer_async(self, request: InferenceRequest, deliver: Deliver) -> None:
        """Route a step's request; its responses reach `deliver` from any thread. Raises
        TritonError when the request cannot be routed or is invalid."""

    def model_config(self, name: str, version: int, namespace: str = "") -> mc.ModelConfig:
        """The final configuration of the READY version serving (name, version) (-1: the
        version policy's newest) in `namespace` (a step's, with --model-namespacing);
        TritonError (NOT_FOUND, UNAVAILABLE) when there is none."""


class EnsembleScheduler:
    def __init__(
        self, config: mc.ModelConfig, server: EnsembleServer, statistics: ModelStatistics
    ) -> None:
        self.plan = EnsemblePlan.from_config(config)
        self.server = server
        self.statistics = statistics

    def start(self) -> None:
        """Nothing to start: steps run on the composing models' own schedulers."""

    def stop(self) -> None:
        """Nothing to stop: the model waits for its requests in flight before unloading."""

    def fail_queued(self) -> None:
        """Nothing queued here: the composing models fail their own queued steps."""

    def stop_accepting(self) -> None:
        """An ensemble still takes requests while the server exits, as Triton's: their steps
        are refused by the composing models' schedulers ("in ensemble 'E', ...")."""

    def open_sequences(self) -> int:
        return 0

    def enqueue(self, request: InferenceRequest) -> None:
        _EnsembleRun(self, request).start()


@dataclass(slots=True)
class _Entry:
    """One iteration of an ensemble tensor: its data (None for an optional input left out) and
    how many readers (steps, or the response) have yet to take it."""

    tensor: Tensor | None
    readers: int
    # The sequence settings that travel with a tensor written by a step (None: the request's).
    sequence: tuple[int | str, int] | None = None


class _TensorData:
    __slots__ = ("entries", "readers", "next_iteration", "batch_size")

    def __init__(self, readers: int) -> None:
        self.entries: dict[int, _Entry] = {}
        self.readers = readers
        self.next_iteration = 0
        # The batch size of the request that wrote it; 0 when it came from a non-batching side.
        self.batch_size = 0

    def add(self, tensor: Tensor | None, sequence: tuple[int | str, int] | None = None) -> int:
        iteration = self.next_iteration
        self.entries[iteration] = _Entry(tensor, self.readers, sequence)
        self.next_iteration += 1
        return iteration

    def take(self, iteration: int) -> None:
        entry = self.entries[iteration]
        entry.readers -= 1
        if entry.readers <= 0:
            del self.entries[iteration]


Updated = set[tuple[str, int]]  # (ensemble tensor, iteration) written since the last look


class _EnsembleRun:
    """One ensemble request in flight (Triton's EnsembleContext)."""

    def __init__(self, scheduler: EnsembleScheduler, request: InferenceRequest) -> None:
        self.plan = scheduler.plan
        self.server = scheduler.server
        self.statistics = scheduler.statistics
        self.request = request
        self.lock = threading.Lock()
        self.inflight: set[InferenceRequest] = set()
        self.error: TritonError | None = None
        self.response_sent = False
        self.finished = False
        # Composing models' compute input / infer / output time, summed over the steps: the
        # ensemble's own compute statistics (Triton's secondary stats aggregator).
        self.compute = [0, 0, 0]
        self.requested = request.requested_output_names or list(self.plan.output_dims)
        self.consumers = self.plan.pruned(self.requested)
        self.configs: dict[tuple[str, int], mc.ModelConfig] = {}
        self.data: dict[str, _TensorData] = {}

    # -- the steps ---------------------------------------------------------------------------

    def start(self) -> None:
        self.request.exec_start_ns = perf_counter_ns()
        with self.lock:
            try:
                steps = self._begin()
            except Exception as exc:
                steps = self._fail(exc)
            self._finish_if_done()
        self._schedule(steps)

    def _begin(self) -> list[tuple[int, InferenceRequest]]:
        """The request's inputs are the first tensors; the steps they make ready."""
        request = self.request
        try:
            self._resolve_models()
        except TritonError as exc:
            self.error = exc
            return []
        batch = request.batch_size if self.plan.batching else 0
        requested = set(self.requested)
        for name, consumers in self.consumers.items():
            self.data[name] = _TensorData(len(consumers) + (name in requested))
        updated: Updated = set()
        for name, tensor in request.inputs.items():
            data = self.data[name]
            data.batch_size = batch
            updated.add((name, data.add(tensor)))
        for name in self.plan.optional_inputs - set(request.inputs):
            data = self.data[name]
            data.batch_size = batch
            updated.add((name, data.add(None)))
        steps = self._next_steps(updated)
        self._finish(self._response(updated))
        return steps

    def _fail(self, exc: Exception) -> list[tuple[int, InferenceRequest]]:
        """A fault of the scheduler itself fails the request at once: steps still running
        are left to finish unheard, so the client is never left waiting."""
        log.exception("ensemble '%s' failed", self.plan.name)
        if self.error is None:
            self.error = as_triton_error(exc)
        self.inflight.clear()
        return []

    def _resolve_models(self) -> None:
        """Hold the composing models' configurations for the request (Triton takes the model
        handles when the request starts): a model not ready now fails the request at once."""
        for step in self.plan.steps:
            key = (step.model_name, step.model_version)
            if key not in self.configs:
                self.configs[key] = self.server.model_config(*key, step.model_namespace)

    def _next_steps(self, updated: Updated) -> list[tuple[int, InferenceRequest]]:
        """GetNextSteps: the steps whose every input now has the iteration just written."""
        ready: set[tuple[int, int]] = set()
        for name, iteration in updated:
            for index in self.consumers.get(name, ()):
                step = self.plan.steps[index]
                if all(
                    iteration in self.data[tensor].entries
                    for tensor in step.input_to_tensor.values()
                ):
                    ready.add((index, iteration))
        steps = [(index, self._step_request(index, it)) for index, it in sorted(ready)]
        self.inflight.update(step_request for _, step_request in steps)
        return steps

    def _step_request(self, index: int, iteration: int) -> InferenceRequest:
        """InitStep: the request to step `index`'s model for one iteration of its inputs."""
        request = self.request
        step = self.plan.steps[index]
        config = self.configs[(step.model_name, step.model_version)]
        batching = config.max_batch_size > 0
        dims = {i.name: tuple(i.dims) for i in config.input}
        sequence: tuple[int | str, int] = (request.correlation_id, request.flags)
        overridden = False
        inputs: dict[str, Tensor] = {}
        taken: list[_TensorData] = []
        for model_input, tensor_name in step.input_to_tensor.items():
            data = self.data[tensor_name]
            entry = data.entries[iteration]
            if data not in taken:
                taken.append(data)
            tensor = entry.tensor
            if tensor is not None:
                shape = reshape_dims(
                    dims.get(model_input, ()), batching, data.batch_size, tensor.shape
                )
                array = tensor.data if shape == tensor.shape else tensor.data.reshape(shape)
                inputs[model_input] = Tensor(model_input, tensor.datatype, shape, array)
            if entry.sequence is not None:
                if overridden and entry.sequence != sequence:
                    log.error(
                        "%sDifferent set of response parameters are set for '%s'. Parameter "
                        "correlation ID %s, flags %d is used.", log_prefix(request.id),
                        step.model_name, sequence[0], sequence[1],
                    )
                    continue
                sequence = entry.sequence
                overridden = True
        for data in taken:
            data.take(iteration)
        step_request = InferenceRequest(
            step.model_name,
            step.model_version,
            model_namespace=step.model_namespace,
            id=request.id,
            inputs=inputs,
            requested_outputs=[RequestedOutput(name) for name in step.output_to_tensor],
            parameters=dict(request.parameters),
            correlation_id=sequence[0],
            flags=sequence[1],
            priority=request.priority,
            timeout_us=request.timeout_us,
        )
        if request.trace is not None:
            step_request.trace = request.trace.child()
        out_batch = 0
        if batching and inputs:
            out_batch = next(iter(inputs.values())).shape[0]
        for tensor_name in step.output_to_tensor.values():
            self.data[tensor_name].batch_size = out_batch
        return step_request

    def _schedule(self, steps: list[tuple[int, InferenceRequest]]) -> None:
        """ScheduleSteps: submit each step (outside the lock), unless the request already
        failed; a step the server refuses fails the request."""
        for index, step_request in steps:
            with self.lock:
                if self.error is not None:
                    self.inflight.discard(step_request)
                    self._finish_if_done()
                    continue
            if self.request.cancelled:
                step_request.cancelled = True

            def deliver(response: InferenceResponse | None, flags: int,
                        index: int = index, step_request: InferenceRequest = step_request
                        ) -> None:
                self._on_response(index, step_request, response, flags)

            try:
                self.server.infer_async(step_request, deliver)
            except Exception as exc:
                error = as_triton_error(exc)
                log.warning(
                    "Ensemble '%s' failed to schedule step : %s", self.plan.name, error.message
                )
                with self.lock:
                    if self.error is None:
                        self.error = error
                    self.inflight.discard(step_request)
                    self._finish_if_done()

    def _on_response(
        self, index: int, step_request: InferenceRequest, response: InferenceResponse | None,
        flags: int,
    ) -> None:
        """A composing model answered: take its outputs, start what they make ready, send what
        the ensemble can answer."""
        with self.lock:
            try:
                steps = self._advance(index, step_request, response, flags)
            except Exception as exc:
                steps = self._fail(exc)
            self._finish_if_done()
            if self.request.cancelled:
                for pending in self.inflight:
                    pending.cancelled = True
        self._schedule(steps)

    def _advance(
        self, index: int, step_request: InferenceRequest, response: InferenceResponse | None,
        flags: int,
    ) -> list[tuple[int, InferenceRequest]]:
        if flags & RESPONSE_COMPLETE_FINAL:
            self.inflight.discard(step_request)
            self._add_compute(step_request)
        if response is None:
            return []
        if response.error is not None:
            if self.error is None:
                self.error = response.error
            return []
        if self.error is not None:
            return []
        updated = self._consume(index, step_request, response)
        steps = self._next_steps(updated)
        self._finish(self._response(updated) if updated else None)
        return steps

    def _consume(
        self, index: int, step_request: InferenceRequest, response: InferenceResponse
    ) -> Updated:
        """ConsumeResponse: the step's outputs become new iterations of their tensors; an
        output the model left out becomes an empty one (it may feed an optional input)."""
        step = self.plan.steps[index]
        sequence = _response_sequence(response, step_request)
        updated: Updated = set()
        missing = dict(step.output_to_tensor)
        for tensor in response.outputs:
            tensor_name = missing.pop(tensor.name, None)
            if tensor_name is None:
                continue
            data = self.data.get(tensor_name)
            if data is None or data.readers == 0:
                continue  # nobody reads it in this request (pruned)
            renamed = Tensor(tensor_name, tensor.datatype, tensor.shape, tensor.data)
            updated.add((tensor_name, data.add(renamed, sequence)))
        for tensor_name in missing.values():
            data = self.data.get(tensor_name)
            if data is not None and data.readers:
                updated.add((tensor_name, data.add(None, sequence)))
        return updated

    # -- the ensemble's responses ------------------------------------------------------------

    def _response(self, updated: Updated) -> InferenceResponse | None:
        """CheckAndSetEnsembleOutput: a response once every requested output has the
        iteration just written."""
        iteration = None
        for name, written in updated:
            if name in self.requested and all(
                written in self.data[out].entries for out in self.requested
            ):
                iteration = written
        if iteration is None:
            return None
        request = self.request
        response = InferenceResponse()
        for name in self.plan.output_dims:
            if name not in self.requested:
                continue
            data = self.data[name]
            entry = data.entries[iteration]
            tensor = entry.tensor
            if tensor is not None:
                shape = reshape_dims(
                    self.plan.output_dims[name], request.batch_size != 0 and self.plan.batching,
                    data.batch_size, tensor.shape,
                )
                array = tensor.data if shape == tensor.shape else tensor.data.reshape(shape)
                response.outputs.append(Tensor(name, tensor.datatype, shape, array))
                if entry.sequence is not None:
                    correlation_id, flags = entry.sequence
                    response.parameters["sequence_id"] = correlation_id
                    response.parameters["sequence_start"] = bool(flags & SEQUENCE_START)
                    response.parameters["sequence_end"] = bool(flags & SEQUENCE_END)
            data.take(iteration)
        return response

    def _finish(self, response: InferenceResponse | None) -> None:
        """Send `response` (the final one when no step is left in flight)."""
        if response is None or self.finished or self.error is not None:
            return
        final = not self.inflight
        if final:
            self._record_success()
            self.finished = True
        self.response_sent = True
        self._send(response, RESPONSE_COMPLETE_FINAL if final else 0)

    def _finish_if_done(self) -> None:
        """FinishEnsemble once no step is in flight: the final flag, or the error."""
        if self.finished or self.inflight:
            return
        if self.error is None and not self.response_sent and not self.plan.decoupled:
            self.error = TritonError.invalid_arg(
                f"{log_prefix(self.request.id)}unexpected deadlock, at least one output is "
                "not set while no more ensemble steps can be made"
            )
        self.finished = True
        if self.error is None:
            self._record_success()
            self._send(None, RESPONSE_COMPLETE_FINAL)
            return
        message = f"in ensemble '{self.plan.name}', {self.error.message}"
        self._send(InferenceResponse(error=TritonError(self.error.code, message)),
                   RESPONSE_COMPLETE_FINAL)

    def _send(self, response: InferenceResponse | None, flags: int) -> None:
        sender = self.request.response_sender
        assert sender is not None
        sender.send(response, flags)

    # -- statistics --------------------------------------------------------------------------

    def _add_compute(self, step_request: InferenceRequest) -> None:
        start = step_request.exec_start_ns
        if not start:
            return  # never executed (refused, or failed in its queue)
        end = step_request.exec_end_ns or perf_counter_ns()
        input_end = step_request.compute_input_end_ns or start
        output_start = step_request.compute_output_start_ns or end
        compute = self.compute
        compute[0] += max(input_end - start, 0)
        compute[1] += max(output_start - input_end, 0)
        compute[2] += max(end - output_start, 0)

    def _record_success(self) -> None:
        """The ensemble's compute time is its steps' (Triton's ReportStatisticsWithDuration):
        lay the sums out as timestamps after its start, for the model's statistics."""
        request = self.request
        compute_input, compute_infer, compute_output = self.compute
        request.compute_input_end_ns = request.exec_start_ns + compute_input
        request.compute_output_start_ns = request.compute_input_end_ns + compute_infer
        request.exec_end_ns = request.compute_output_start_ns + compute_output
        self.statistics.record_execution([request])


def _response_sequence(
    response: InferenceResponse, step_request: InferenceRequest
) -> tuple[int | str, int]:
    """The sequence settings a step's outputs carry on: the step's own, unless the response
    names others in its sequence_id / sequence_start / sequence_end parameters."""
    parameters: dict[str, Any] = response.parameters
    if not any(key in parameters for key in ("sequence_id", "sequence_start", "sequence_end")):
        return (step_request.correlation_id, step_request.flags)
    correlation_id = parameters.get("sequence_id", step_request.correlation_id)
    flags = 0
    if parameters.get("sequence_start"):
        flags |= SEQUENCE_START
    if parameters.get("sequence_end"):
        flags |= SEQUENCE_END
    return (correlation_id, flags)
