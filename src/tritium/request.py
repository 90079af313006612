"""InferenceRequest, InferenceResponse and ResponseSender: what flows between layers.

A frontend decodes its wire format into an `InferenceRequest`; the server routes it to a model,
whose backend answers through the request's `ResponseSender`, once for an ordinary model or any
number of times for a decoupled one. The sender is thread-safe because backends run on instance
threads while frontends wait on the event loop. `parse_version` reads a request's model
version as Triton does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import TritonError
from .tensor import Tensor
from .trace import Trace

# TRITONSERVER_RESPONSE_COMPLETE_FINAL: the flag marking a request's last response.
RESPONSE_COMPLETE_FINAL = 1
# TRITONSERVER_REQUEST_FLAG_SEQUENCE_START / _END.
SEQUENCE_START = 1
SEQUENCE_END = 2
# TRITONSERVER_REQUEST_RELEASE_ALL / _RESCHEDULE: how a backend hands a request back.
REQUEST_RELEASE_ALL = 1
REQUEST_RELEASE_RESCHEDULE = 2


@dataclass(slots=True)
class RequestedOutput:
    """An output the client asked for, with its per-output parameters (binary_data, ...)."""

    name: str
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class InferenceResponse:
    """One response: output tensors or an error. The server fills in model name/version/id."""

    outputs: list[Tensor] = field(default_factory=list)
    error: TritonError | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    model_name: str = ""
    model_version: str = ""
    id: str = ""
    # Outputs a compiled backend wanted in memory other than the CPU's, by name: (memory
    # type, device id), offered to the response allocator of a request made through the C API.
    preferred_memory: dict[str, tuple[int, int]] | None = None

    def output(self, name: str) -> Tensor | None:
        for tensor in self.outputs:
            if tensor.name == name:
                return tensor
        return None


Deliver = Callable[["InferenceResponse | None", int], None]

# TRITONSERVER_MemoryType
MEMORY_CPU, MEMORY_CPU_PINNED, MEMORY_GPU = 0, 1, 2
# (output name or None for any, its byte size if known, the backend's preferred memory type
# and device id) -> the memory type and device id the client wants the output in. Raises
# TritonError when the client cannot say.
OutputQuery = Callable[[str | None, int | None, int, int], tuple[int, int]]


class ResponseSender:
    """Sends a request's responses back toward the frontend, from any thread.

    `send(response, flags)` with `flags=RESPONSE_COMPLETE_FINAL` ends the request; a final call
    may carry no response (the decoupled "empty final"). Sending after the final response is an
    error, as in Triton.
    """

    __slots__ = ("_deliver", "_completed", "_responded")

    def __init__(self, deliver: Deliver) -> None:
        self._deliver: Deliver | None = deliver
        self._completed = False
        self._responded = False  # a response (not only a flag) has been sent

    @property
    def is_completed(self) -> bool:
        return self._completed

    @property
    def has_responded(self) -> bool:
        """A response has gone out: a non-decoupled request's answer is that one."""
        return self._responded

    def send(self, response: InferenceResponse | None = None, flags: int = 0) -> None:
        deliver = self._deliver
        if self._completed or deliver is None:
            raise TritonError.invalid_arg(
                "Unable to send response. Response sender has been closed."
            )
        if flags & RESPONSE_COMPLETE_FINAL:
            self._completed = True
            # The delivery chain usually refers back to the request (which refers to this
            # sender): let go of it, so a finished request is freed by reference counting
            # rather than left for the cyclic garbage collector.
            self._deliver = None
        if response is not None:
            self._responded = True
        deliver(response, flags)


class InferenceRequest:
    """A request after decoding: model, inputs, wanted outputs, parameters and timing.

    Frontends fill the client-facing fields; the server sets `response_sender` and the
    timestamps, which the model's statistics read when the final response is sent.
    """

    __slots__ = (
        "model_name",
        "model_version",
        "model_namespace",
        "id",
        "inputs",
        "requested_outputs",
        "parameters",
        "correlation_id",
        "flags",
        "priority",
        "timeout_us",
        "batch_size",
        "response_sender",
        "queue_start_ns",
        "exec_start_ns",
        "compute_input_end_ns",
        "compute_output_start_ns",
        "exec_end_ns",
        "gpu",
        "cache_hit_start_ns",
        "cache_hit_ns",
        "cancelled",
        "answered_later",
        "reschedulable",
        "rescheduled",
        "statistics_by_backend",
        "reported_statistics",
        "form",
        "output_query",
        "region_windows",
        "collects_statistics",
        "trace",
    )

    def __init__(
        self,
        model_name: str,
        model_version: int = -1,
        *,
        model_namespace: str = "",
        id: str = "",
        inputs: dict[str, Tensor] | None = None,
        requested_outputs: list[RequestedOutput] | None = None,
        parameters: dict[str, Any] | None = None,
        correlation_id: int | str = 0,
        flags: int = 0,
        priority: int = 0,
        timeout_us: int = 0,
    ) -> None:
        self.model_name = model_name
        # -1 means "the version the model's version policy serves" (the newest ready one).
        self.model_version = model_version
        # Set only for an ensemble step with --model-namespacing: which model of that name.
        self.model_namespace = model_namespace
        self.id = id
        self.inputs: dict[str, Tensor] = inputs if inputs is not None else {}
        # Empty means "every output of the model", as in Triton.
        self.requested_outputs: list[RequestedOutput] = requested_outputs or []
        self.parameters: dict[str, Any] = parameters if parameters is not None else {}
        self.correlation_id = correlation_id
        self.flags = flags
        self.priority = priority
        self.timeout_us = timeout_us
        self.batch_size = 0
        self.response_sender: ResponseSender | None = None
        self.queue_start_ns = 0
        self.exec_start_ns = 0
        self.compute_input_end_ns = 0
        self.compute_output_start_ns = 0
        self.exec_end_ns = 0
        # The GPU of the instance that executed it (-1: none, or not one of this server's):
        # the `gpu_uuid` its inference metrics carry, as Triton labels a GPU instance's.
        self.gpu = -1
        # Answered from the response cache: when the lookup started and how long it took.
        self.cache_hit_start_ns = 0
        self.cache_hit_ns = 0
        # Set when the client went away or cancelled; backends may stop early (is_cancelled).
        self.cancelled = False
        # Set by a backend that keeps the request past execute and answers it later (Triton:
        # a backend that releases the request after TRITONBACKEND_ModelInstanceExecute).
        self.answered_later = False
        # Set by a scheduler that can run the request again (an iterative sequence's);
        # `rescheduled`: the backend asked for that during this execution (`release`).
        self.reschedulable = False
        self.rescheduled = False
        # Set by the server for a backend that counts its requests itself (a compiled one,
        # through TRITONBACKEND_ModelInstanceReportStatistics); `reported_statistics`: the
        # (exec start, compute start, compute end, exec end) it reported as a success before
        # sending the final response, counted when that response goes out.
        self.statistics_by_backend = False
        self.reported_statistics: tuple[int, int, int, int] | None = None
        # Set by a frontend that decoded the request from a kept template: the same object for
        # every request with the same input names, datatypes and shapes and the same requested
        # outputs, so a model checks such a request's form once (request_normalizer) and the
        # dynamic batcher need not compare the shapes of two requests of one form.
        self.form: object | None = None
        # Where the client wants outputs (TRITONBACKEND_RequestOutputBufferProperties): set by
        # a frontend whose request writes outputs to shared memory, and by the C API for a
        # request whose response allocator has a query function. None: host memory.
        self.output_query: OutputQuery | None = None
        # The client shared-memory windows its inputs and outputs name (`shared_memory.Window`,
        # set by the frontend that decoded it): each keeps its region in use, so that
        # unregistering the region fails, until the frontend has sent the answer (as Triton).
        self.region_windows: tuple[Any, ...] = ()
        # False for the sequence batcher's null requests: statistics never count them, as
        # Triton's core makes them with collect_stats_ off (a backend may still report them).
        self.collects_statistics = True
        # The request's trace (`trace.Trace`), when its frontend's trace setting sampled it:
        # the server stamps the request's activities in it when the request ends.
        self.trace: Trace | None = None

    @property
    def requested_output_names(self) -> list[str]:
        return [out.name for out in self.requested_outputs]

    def input(self, name: str) -> Tensor | None:
        return self.inputs.get(name)

    def respond(self, response: InferenceResponse) -> None:
        """Send `response` as this request's one and final response."""
        assert self.response_sender is not None, "request was never routed by the server"
        self.response_sender.send(response, RESPONSE_COMPLETE_FINAL)

    def respond_error(self, error: TritonError) -> None:
        self.respond(InferenceResponse(error=error))

    def release(self, flags: int = REQUEST_RELEASE_ALL) -> None:
        """TRITONBACKEND_RequestRelease, for a backend that wants the request run again:
        with REQUEST_RELEASE_RESCHEDULE the scheduler queues it anew once execute returns (the
        next step of an iterative sequence), without a response for this execution. Any other
        release needs no call: the server releases a request when execute returns. Raises
        INVALID_ARG, with Triton's message, if the model's scheduler cannot run it again."""
        if flags & REQUEST_RELEASE_RESCHEDULE:
            if not self.reschedulable:
                raise TritonError.invalid_arg(
                    "Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while "
                    "the model is not configured to handle such a flag."
                )
            self.rescheduled = True


_NO_ID_PREFIX = "[request id: <id_unknown>] "


def log_prefix(request_id: str) -> str:
    """How Triton's core starts its messages about a request (InferenceRequest::LogRequest).

    Frontends take it once per request; most clients send no id, and then it costs nothing.
    """
    return f"[request id: {request_id}] " if request_id else _NO_ID_PREFIX


def apply_parameters(request: InferenceRequest, parameters: dict[str, Any]) -> None:
    """Request parameters as Triton's core reads them, onto `request`.

    sequence_id, sequence_start, sequence_end, priority and timeout set the request's fields;
    every other key is a parameter the model sees. The frontend has already checked the values
    and taken out its own options: Triton checks them against each protocol's wire types
    (protobuf kinds for gRPC, JSON types for HTTP) and words those errors per protocol.
    """
    for key, value in parameters.items():
        if key == "sequence_id":
            request.correlation_id = value
        elif key == "sequence_start":
            if value:
                request.flags |= SEQUENCE_START
        elif key == "sequence_end":
            if value:
                request.flags |= SEQUENCE_END
        elif key == "priority":
            request.priority = value
        elif key == "timeout":
            request.timeout_us = value
        else:
            request.parameters[key] = value


_LONG_LIMIT = 2**63


def parse_version(version: str | int) -> int:
    """Triton's GetModelVersionFromString: "" means -1 (the version policy picks)."""
    if isinstance(version, int):
        return version
    if version == "":
        return -1
    try:
        value = int(version.strip()) if version.strip().lstrip("+-").isdigit() else None
    except ValueError:
        value = None
    if value is None or not -_LONG_LIMIT <= value < _LONG_LIMIT:  # what std::stol can read
        raise TritonError.invalid_arg(
            f"failed to get model version from specified version string '{version}' "
            "(details: stol), version should be an integral value > 0"
        )
    if value < 0:
        raise TritonError.invalid_arg(
            f"invalid model version specified '{version}' , version should be an integral "
            "value > 0"
        )
    return value
