"""The square backend: Triton's decoupled example (triton-inference-server/square_backend).

A model with input IN (INT32, dims [1]) and output OUT (INT32, dims [1]) and the decoupled
transaction policy. For a request whose IN holds N, the backend sends N responses, each with
OUT = N, then the final flag on its own (an "empty final"); N = 0 sends only the final flag.
The model may batch, as long as each request is batch-1.

Execute returns at once: each request's responses come from a thread of their own, through the
request's response sender, as a decoupled backend must. A cancelled request stops early and
gets its final flag.

Model parameters, as in Triton's backend (string values holding integers):
CUSTOM_INFER_DELAY_NS and CUSTOM_OUTPUT_DELAY_NS sleep before and after producing each
response; of the N responses, the last CUSTOM_EMPTY_COUNT are not sent at all and the
CUSTOM_FAIL_COUNT before them are errors ("simulated failure"); a request found cancelled
before a response takes CUSTOM_CANCEL_DELAY_NS to stop.

Each response is reported in the model's response statistics as Triton's backend reports it:
from its start, its outputs made from the end of the infer delay (an empty response has
none), a failure with its error, a cancellation as CANCELLED.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

import numpy as np
from tritonclient.grpc import model_config_pb2 as mc

from tritium.backend import (
    Code,
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


class SquareModelState(ModelState):
    def __init__(self, model: Model) -> None:
        super().__init__(model)
        self.infer_delay_ns = self._count("CUSTOM_INFER_DELAY_NS")
        self.output_delay_ns = self._count("CUSTOM_OUTPUT_DELAY_NS")
        self.cancel_delay_ns = self._count("CUSTOM_CANCEL_DELAY_NS")
        self.fail_count = self._count("CUSTOM_FAIL_COUNT")
        self.empty_count = self._count("CUSTOM_EMPTY_COUNT")
        self._validate()

    def _count(self, key: str) -> int:
        # Triton's backend leaves a parameter that is not a plain number at its default (0).
        value = self.parameter(key, "") or ""
        return int(value) if value.isdigit() else 0

    def _validate(self) -> None:
        """Triton's ValidateModelConfig for this backend, with its messages."""
        config = self.config
        if len(config.input) != 1:
            raise TritonError.invalid_arg(f"expected 1 input, got {len(config.input)}")
        if len(config.output) != 1:
            raise TritonError.invalid_arg(f"expected 1 output, got {len(config.output)}")
        tensor_in, tensor_out = config.input[0], config.output[0]
        if tensor_in.name != "IN":
            raise TritonError.invalid_arg(
                f"expected first input tensor name to be IN, got {tensor_in.name}"
            )
        if tensor_out.name != "OUT":
            raise TritonError.invalid_arg(
                f"expected first output tensor name to be OUT, got {tensor_out.name}"
            )
        for label, tensor in (("IN", tensor_in), ("OUT", tensor_out)):
            if list(tensor.dims) != [1]:
                raise TritonError.invalid_arg(
                    f"expected {label} shape to be [1], got {dims_string(tensor.dims)}"
                )
        for label, tensor in (("IN", tensor_in), ("OUT", tensor_out)):
            if wire_datatype(tensor.data_type) != "INT32":
                raise TritonError.invalid_arg(
                    f"expected {label} datatype to be INT32, got "
                    f"{mc.DataType.Name(tensor.data_type)}"
                )

    def sleep_ns(self, delay_ns: int) -> None:
        if delay_ns > 0:
            time.sleep(delay_ns / 1e9)


class SquareInstanceState(DecoupledInstanceState):
    model_state: SquareModelState

    def process(self, request: Request) -> None:
        """Check the request, then start the thread that answers it."""
        tensor = request.input("IN")
        if tensor is None:
            request.respond_error(TritonError.invalid_arg("input 'IN' is missing"))
            return
        shape = tuple(tensor.shape)
        if len(shape) == 2 and shape[0] != 1:
            request.respond_error(TritonError.invalid_arg("unexpected shape for IN input"))
            return
        values = np.asarray(tensor.data).reshape(-1)
        if values.size == 0:
            request.respond_error(TritonError.invalid_arg("unexpected size for IN input"))
            return
        count = max(int(values[0]), 0)
        self.stream(request, lambda: self._responses(request, count, len(shape)))

    def _responses(
        self, request: Request, count: int, dims_count: int
    ) -> Iterator[InferenceResponse]:
        """`count` responses carrying `count`, shaped by the CUSTOM_* test parameters."""
        state = self.model_state
        report = self.instance.report_response_statistics
        output_shape = (1,) * dims_count
        for index in range(count):
            start = time.perf_counter_ns()
            if request.cancelled:
                state.sleep_ns(state.cancel_delay_ns)
                report(index, start, 0, time.perf_counter_ns(),
                       TritonError(Code.CANCELLED, "request cancelled"))
                return
            state.sleep_ns(state.infer_delay_ns)
            if index + state.empty_count >= count:  # the last CUSTOM_EMPTY_COUNT: nothing
                report(index, start, 0, time.perf_counter_ns())
                continue
            output_start = time.perf_counter_ns()
            data = np.full(output_shape, count, dtype=np.int32)
            response = InferenceResponse(outputs=[Tensor("OUT", "INT32", output_shape, data)])
            state.sleep_ns(state.output_delay_ns)
            end = time.perf_counter_ns()
            if index + state.fail_count + state.empty_count >= count:
                response = InferenceResponse(error=TritonError(Code.UNKNOWN, "simulated failure"))
            yield response
            report(index, start, output_start, end, response.error)


def model_initialize(model: Model) -> None:
    SquareModelState.create(model)


def model_instance_initialize(instance: ModelInstance) -> None:
    SquareInstanceState.create(instance)


def model_instance_finalize(instance: ModelInstance) -> None:
    if isinstance(instance.state, SquareInstanceState):
        instance.state.finalize()


def model_instance_execute(instance: ModelInstance, requests: Sequence[Request]) -> None:
    state: SquareInstanceState = instance.state
    for request in requests:
        state.process(request)
