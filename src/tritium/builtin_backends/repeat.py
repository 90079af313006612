"""The repeat backend: Triton's decoupled example (triton-inference-server/repeat_backend).

A model with inputs IN (INT32, dims [-1] or any one dimension), DELAY (UINT32, same dims as IN)
and WAIT (UINT32, dims [1]), outputs OUT (INT32, dims [1]) and IDX (UINT32, dims [1]), no
batching, and the decoupled transaction policy; the configuration lists them in that order,
as Triton's backend requires.

For a request, the backend sends one response per element of IN: the i'th waits DELAY[i]
milliseconds, then carries OUT = IN[i] and IDX = i. Then the final flag follows on its own
(an "empty final"); IN of shape [0] sends only the final flag. Execute itself returns after WAIT
milliseconds, which may be before every response is out, so one instance can be answering
several requests at once and their responses interleave.

The responses come from a thread of their own, through the request's response sender, as a
decoupled backend must. A cancelled request stops early and gets its final flag. Where the
configuration marks DELAY or WAIT `optional: true` and a request leaves them out, they count
as zero (Triton's backend always reads all three).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

import numpy as np
from tritonclient.grpc import model_config_pb2 as mc

from tritium.backend import (
    DecoupledInstanceState,
    InferenceResponse,
    Model,
    ModelInstance,
    ModelState,
    Request,
    Tensor,
    TritonError,
)
from tritium.tensor import dims_string, wire_datatype

# How often a waiting response thread looks at whether its request was cancelled.
_CANCEL_POLL_S = 0.02


class RepeatModelState(ModelState):
    def __init__(self, model: Model) -> None:
        super().__init__(model)
        self._validate()

    def _validate(self) -> None:
        """Triton's ValidateModelConfig for this backend, with its messages."""
        config = self.config
        if config.max_batch_size != 0:
            raise TritonError.invalid_arg(
                "repeat backend only supports models with max_batch_size == 0"
            )
        if len(config.input) != 3:
            raise TritonError.invalid_arg(f"expected 3 inputs, got {len(config.input)}")
        if len(config.output) != 2:
            raise TritonError.invalid_arg(f"expected 2 outputs, got {len(config.output)}")
        tensor_in, delay, wait = config.input
        out, idx = config.output
        for tensor, position, expected in (
            (tensor_in, "first input", "IN"),
            (delay, "second input", "DELAY"),
            (wait, "third input", "WAIT"),
            (out, "first output", "OUT"),
            (idx, "second output", "IDX"),
        ):
            if tensor.name != expected:
                raise TritonError.invalid_arg(
                    f"expected {position} tensor name to be {expected}, got {tensor.name}"
                )
        if len(tensor_in.dims) != 1:
            raise TritonError.invalid_arg(
                f"expected IN shape to have one dimension, got {dims_string(tensor_in.dims)}"
            )
        if list(tensor_in.dims) != list(delay.dims):
            raise TritonError.invalid_arg(
                f"expected IN and DELAY shape to match, got {dims_string(tensor_in.dims)} and "
                f"{dims_string(delay.dims)}"
            )
        for label, tensor in (("WAIT", wait), ("OUT", out), ("IDX", idx)):
            if list(tensor.dims) != [1]:
                raise TritonError.invalid_arg(
                    f"expected {label} shape to be [1], got {dims_string(tensor.dims)}"
                )
        for label, tensor, expected in (
            ("IN", tensor_in, "INT32"),
            ("DELAY", delay, "UINT32"),
            ("WAIT", wait, "UINT32"),
            ("OUT", out, "INT32"),
            ("IDX", idx, "UINT32"),
        ):
            if wire_datatype(tensor.data_type) != expected:
                raise TritonError.invalid_arg(
                    f"expected {label} datatype to be {expected}, got "
                    f"{mc.DataType.Name(tensor.data_type)}"
                )


class RepeatInstanceState(DecoupledInstanceState):
    model_state: RepeatModelState

    def process(self, request: Request) -> int:
        """Check the request and start the thread that answers it; return WAIT (ms)."""
        wait = request.input("WAIT")
        wait_ms = 0
        if wait is not None:
            values = np.asarray(wait.data).reshape(-1)
            if values.size != 1:
                request.respond_error(TritonError.invalid_arg("unexpected size for WAIT input"))
                return 0
            wait_ms = int(values[0])

        tensor_in = request.input("IN")
        if tensor_in is None:
            request.respond_error(TritonError.invalid_arg("input 'IN' is missing"))
            return wait_ms
        delay = request.input("DELAY")
        in_shape = tuple(tensor_in.shape)
        if delay is not None and tuple(delay.shape) != in_shape:
            request.respond_error(
                TritonError.invalid_arg(
                    f"expected IN and DELAY shape to match, got {dims_string(in_shape)} and "
                    f"{dims_string(delay.shape)}"
                )
            )
            return wait_ms
        # Copies: the request's tensors may be views of the received message.
        values = np.array(tensor_in.data, dtype=np.int32).reshape(-1)
        if delay is None:
            delays = np.zeros(values.size, dtype=np.uint32)
        else:
            delays = np.array(delay.data, dtype=np.uint32).reshape(-1)

        self.stream(request, lambda: _responses(request, values, delays))
        return wait_ms


def _responses(
    request: Request, values: np.ndarray, delays: np.ndarray
) -> Iterator[InferenceResponse]:
    """One response per IN element, each after its DELAY, until the request is cancelled."""
    for index in range(values.size):
        if not _sleep_unless_cancelled(request, int(delays[index]) / 1000.0):
            return
        yield InferenceResponse(
            outputs=[
                Tensor("OUT", "INT32", (1,), values[index : index + 1].copy()),
                Tensor("IDX", "UINT32", (1,), np.array([index], dtype=np.uint32)),
            ]
        )


def _sleep_unless_cancelled(request: Request, seconds: float) -> bool:
    """Sleep `seconds`; False (at once, or as soon as noticed) if the request is cancelled."""
    deadline = time.monotonic() + seconds
    while not request.cancelled:
        left = deadline - time.monotonic()
        if left <= 0:
            return True
        time.sleep(min(left, _CANCEL_POLL_S))
    return False


def model_initialize(model: Model) -> None:
    RepeatModelState.create(model)


def model_instance_initialize(instance: ModelInstance) -> None:
    RepeatInstanceState.create(instance)


def model_instance_finalize(instance: ModelInstance) -> None:
    if isinstance(instance.state, RepeatInstanceState):
        instance.state.finalize()


def model_instance_execute(instance: ModelInstance, requests: Sequence[Request]) -> None:
    if len(requests) > 1:
        raise TritonError.invalid_arg(
            "repeat backend does not support batched request execution"
        )
    state: RepeatInstanceState = instance.state
    wait_ms = 0
    for request in requests:
        wait_ms = state.process(request)
    # Hold the instance for WAIT milliseconds, then let the server give it the next request
    # while this one's responses may still be going out.
    if wait_ms > 0:
        time.sleep(wait_ms / 1000.0)
