"""LoadedModel: one loaded model version, whatever serves it (Triton core's Model).

The base of TritonModel (a backend's model, model.py) and EnsembleModel (ensemble.py), as
Triton's Model is the base of its TritonModel and EnsembleModel: the configuration, the
scheduler, the statistics and the labels, and the way requests come in (`hold`, then the
holder's `submit`: normalise, count in flight, hand to the scheduler or the response cache)
and stop coming (`retire`, `unload` once those in flight are done).

A request holds its model version from the moment it is resolved (ResolvedModel), as a Triton
request holds a reference to its model: its decoding reads that version's configuration and
labels, it runs on that version, and a reload meanwhile swaps the version out of the lookup
but does not unload it until the request is done.
"""

from __future__ import annotations

import abc
import logging
import threading
from pathlib import Path
from time import perf_counter_ns

from tritonclient.grpc import model_config_pb2 as mc

from .. import heap
from ..errors import Code, TritonError
from ..request import (
    RESPONSE_COMPLETE_FINAL,
    Deliver,
    InferenceRequest,
    InferenceResponse,
    ResponseSender,
)
from ..response_cache import ModelResponseCache, ResponseCache
from ..scheduler import Scheduler
from ..statistics import ModelStatistics, failure_reason
from .output_reshape import apply_output_reshapes, output_reshapes
from .request_normalizer import RequestSpec, normalize_request

log = logging.getLogger("tritium.model")


class ModelRetired(TritonError):
    """Raised by `LoadedModel.hold` once the version is being unloaded or replaced.

    The server then resolves the request again, to the version that replaced it (a reload), so
    a request that raced a swap is never lost.
    """

    def __init__(self, name: str, version: int) -> None:
        super().__init__(
            Code.UNAVAILABLE,
            f"Request for unknown model: '{name}' version {version} is not at ready state",
        )


class LoadedModel(abc.ABC):
    # Whether its requests' traces show an execution (COMPUTE_*): an ensemble's do not, as
    # in Triton, where only its steps run on a backend.
    traces_compute = True

    def __init__(
        self, name: str, version: int, repository_path: Path, statistics: ModelStatistics
    ) -> None:
        self.name = name
        self.version = version
        # The model's directory (config.pbtxt and the version folders).
        self.repository_path = repository_path
        self.statistics = statistics
        self.scheduler: Scheduler | None = None
        # Output name -> labels (label_filename), for classification.
        self.labels: dict[str, list[str]] = {}
        self._version_text = str(version)
        # What normalize_request reads from the configuration (built once it is final).
        self._spec: RequestSpec | None = None
        self._decoupled: bool | None = None
        self._output_reshapes: dict[str, tuple[int, ...]] | None = None
        self._cache: ModelResponseCache | None = None
        self._inflight = 0
        self._waiters = 0
        self._retired = False
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)

    @property
    @abc.abstractmethod
    def config(self) -> mc.ModelConfig:
        """The final configuration (after auto-complete and normalisation)."""

    def failure_reason(self, request: InferenceRequest, error: TritonError | None) -> str:
        """The reason a failed request of this model counts under (nv_inference_request_failure)."""
        return failure_reason(request, error)

    def use_response_cache(self, cache: ResponseCache | None) -> None:
        """Answer from and fill the server's `cache` if it has one and the configuration
        enables it (Triton never caches for decoupled or sequence models: the configuration
        check refuses those). Called once the configuration is final."""
        config = self.config
        if cache is None or not config.response_cache.enable or self.decoupled \
                or config.HasField("sequence_batching"):
            return
        self._cache = ModelResponseCache(cache, self.name, self._version_text,
                                         [o.name for o in config.output], self.statistics)

    def is_ready(self) -> bool:
        """Whether the version can serve; a backend's model asks its instances."""
        return True

    @property
    def decoupled(self) -> bool:
        decoupled = self._decoupled
        if decoupled is None:  # read once the configuration is final: protobuf reads cost
            decoupled = self._decoupled = self.config.model_transaction_policy.decoupled
        return decoupled

    def hold(self) -> ResolvedModel:
        """Take an in-flight slot for one request: the version stays loaded until the request
        is done (or the holder closes unused). Raises ModelRetired once retired."""
        # The slot is taken first, so that `retire` then `wait_idle` can never miss a request.
        with self._lock:
            if self._retired:
                raise ModelRetired(self.name, self.version)
            self._inflight += 1
        return ResolvedModel(self)

    def _run(self, request: InferenceRequest, deliver: Deliver) -> None:
        """ResolvedModel.submit, on the slot `hold` took: validate and queue `request`."""
        request_start = perf_counter_ns() if request.trace is not None else 0
        spec = self._spec
        if spec is None:
            spec = self._spec = RequestSpec(self.config)
        try:
            normalize_request(request, spec)
        except BaseException:
            self._finish_one()
            raise
        scheduler = self.scheduler
        assert scheduler is not None
        name = self.name
        version = self._version_text
        record_request = self.statistics.record_request
        finish_one = self._finish_one
        failed = False
        reason = "OTHER"
        reshapes = self._output_reshapes
        if reshapes is None:
            reshapes = self._output_reshapes = output_reshapes(self.config)
        batching = spec.max_batch_size > 0
        trace = request.trace
        tensors_traced = trace is not None and trace.tensors
        if tensors_traced and trace is not None:
            for tensor in request.inputs.values():
                trace.record_tensor("TENSOR_QUEUE_INPUT", tensor)

        def on_response(response: InferenceResponse | None, flags: int) -> None:
            nonlocal failed, reason
            if response is not None:
                response.model_name = name
                response.model_version = version
                response.id = request.id
                if reshapes and response.outputs:
                    apply_output_reshapes(response, reshapes, batching)
                if tensors_traced and trace is not None and response.error is None:
                    for tensor in response.outputs:
                        trace.record_tensor("TENSOR_BACKEND_OUTPUT", tensor)
                if response.error is not None and not failed:
                    failed = True
                    reason = self.failure_reason(request, response.error)
            if flags & RESPONSE_COMPLETE_FINAL:
                if request.trace is not None:
                    self._trace(request, request_start)
                record_request(request, not failed, reason)
                finish_one()
            deliver(response, flags)

        request.response_sender = ResponseSender(on_response)
        request.queue_start_ns = perf_counter_ns()
        if self._cache is not None and self._cache.serve(request):
            return
        try:
            scheduler.enqueue(request)
        except BaseException:
            # Refused by the scheduler (e.g. a sequence never started): no response will come.
            request.response_sender = None
            finish_one()
            raise

    def _trace(self, request: InferenceRequest, request_start: int) -> None:
        """The request's activities, into its trace, as it ends: its execution as the
        statistics read it (a compiled backend's own account where it gave one; an
        execution still ending ends now), none for an ensemble."""
        assert request.trace is not None
        end = perf_counter_ns()
        start = input_end = output_start = exec_end = 0
        if self.traces_compute:
            start, input_end, output_start, exec_end = (
                request.reported_statistics
                if not request.exec_start_ns and request.reported_statistics is not None
                else (request.exec_start_ns, request.compute_input_end_ns,
                      request.compute_output_start_ns, request.exec_end_ns))
        if start:
            exec_end = exec_end or end
            output_start = output_start or exec_end
            input_end = input_end or start
        request.trace.record_request(self.name, self.version, request.id, zip(
            ("REQUEST_START", "QUEUE_START", "COMPUTE_START", "COMPUTE_INPUT_END",
             "COMPUTE_OUTPUT_START", "COMPUTE_END", "REQUEST_END"),
            (request_start, request.queue_start_ns, start, input_end, output_start, exec_end,
             end), strict=True))

    def _finish_one(self) -> None:
        with self._lock:
            self._inflight -= 1
            if self._inflight == 0 and self._waiters:
                self._idle.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no request is in flight; False if `timeout` passed first."""
        with self._idle:
            self._waiters += 1
            try:
                return self._idle.wait_for(lambda: self._inflight == 0, timeout)
            finally:
                self._waiters -= 1

    @property
    def inflight(self) -> int:
        return self._inflight

    def stop_accepting(self) -> None:
        """The server is exiting: the scheduler refuses what would start new work (Triton's
        scheduler Stop); what is queued, executing or continues an open sequence goes on."""
        if self.scheduler is not None:
            self.scheduler.stop_accepting()

    def pending_at_exit(self) -> int:
        """What an exiting server waits for on this version: its requests in flight, or its
        open sequences where there are more."""
        scheduler = self.scheduler
        sequences = scheduler.open_sequences() if scheduler is not None else 0
        return max(self._inflight, sequences)

    def retire(self) -> None:
        """Take no new request (they get ModelRetired); those already in flight go on."""
        with self._lock:
            self._retired = True

    def fail_queued(self) -> None:
        """Retire, and answer the requests still queued UNAVAILABLE (the server is exiting);
        those executing go on."""
        self.retire()
        if self.scheduler is not None:
            self.scheduler.fail_queued()

    def unload(self, timeout: float | None = None) -> None:
        """Finish in-flight requests (up to `timeout`), then tear the version down."""
        self.retire()
        if not self.wait_idle(timeout):
            log.warning(
                "model '%s' version %d unloading with %d request(s) still in flight",
                self.name,
                self.version,
                self._inflight,
            )
        self._teardown()
        heap.release()

    def _teardown(self) -> None:
        """Stop the scheduler; a backend's model then finalizes its instances and itself."""
        if self.scheduler is not None:
            self.scheduler.stop()
            self.scheduler = None


class ResolvedModel:
    """The model version one request was resolved to (`LoadedModel.hold`), until it is
    submitted: what the frontend reads to decode and encode (config, labels), and where the
    request runs. Closing it unsubmitted (a request that failed to decode) gives the slot back;
    use it as a context manager around decode and submit."""

    __slots__ = ("model", "_held")

    def __init__(self, model: LoadedModel) -> None:
        self.model = model
        self._held = True

    @property
    def config(self) -> mc.ModelConfig:
        return self.model.config

    @property
    def labels(self) -> dict[str, list[str]]:
        return self.model.labels

    @property
    def decoupled(self) -> bool:
        return self.model.decoupled

    def submit(self, request: InferenceRequest, deliver: Deliver) -> None:
        """Validate `request` against this version's configuration and queue it on it.

        Raises TritonError for a request the model cannot take; otherwise every response,
        including the final one, reaches `deliver` (from an instance thread). Once only.
        """
        if not self._held:
            raise TritonError.internal("a resolved model takes one request")
        self._held = False  # the request owns the slot now, and gives it back when done
        self.model._run(request, deliver)

    def close(self) -> None:
        if self._held:
            self._held = False
            self.model._finish_one()

    def __enter__(self) -> ResolvedModel:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
