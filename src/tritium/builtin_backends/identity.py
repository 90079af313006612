"""The identity backend: OUTPUTn = INPUTn for any datatype, as Triton's identity backend.

It is the example backend authors copy: a ModelState that reads the configuration once, a
ModelInstanceState that writes only `execute`, and the entry points wiring them to the server.
Model parameter `execute_delay_ms` sleeps in every execute, to make load and batching visible;
`creation_delay_sec` sleeps once while the model loads (after logging "Creation delay is set
to: N"), to make loading slow, as Triton's QA tests use it.
As Triton's: an output whose optional input was not given is zeros of that input's type and
shape (variable dims as 1); with parameter `enable_custom_tracing` "true", a traced request's
trace gets the activities CUSTOM_ACTIVITY_START, CUSTOM_ACTIVITY_END (100 ms apart) and
CUSTOM_SINGLE_ACTIVITY, plus `nested_span_count` nested CUSTOM_ACTIVITY<i>_START/_END spans
with a CUSTOM_SINGLE_ACTIVITY every `single_activity_frequency` of them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import numpy as np

from tritium.backend import (
    Model,
    ModelInstance,
    ModelInstanceState,
    ModelState,
    Request,
    TritonError,
)
from tritium.datatypes import NUMPY_DTYPES
from tritium.tensor import wire_datatype

log = logging.getLogger("tritium.backend.identity")

_CUSTOM_SPAN_S = 0.1  # how long Triton's identity backend holds each custom span open


class IdentityModelState(ModelState):
    def __init__(self, model: Model) -> None:
        super().__init__(model)
        self.delay_s = float(self.parameter("execute_delay_ms", "0") or 0) / 1000.0
        # INPUT3 -> OUTPUT3: outputs are matched to inputs by the index in their names.
        self.output_for_input = {
            name: "OUTPUT" + name[len("INPUT") :] for name in self.input_configs
        }
        unmatched = [o for o in self.output_for_input.values() if o not in self.output_configs]
        if unmatched:
            raise TritonError.invalid_arg(
                f"identity model '{self.name}' needs an output for each input; "
                f"missing {', '.join(unmatched)}"
            )
        # The output of each optional input: its dtype and shape (variable dims as 1).
        self.zeros_for_missing = {
            self.output_for_input[name]: (
                NUMPY_DTYPES[wire_datatype(config.data_type)],
                tuple(1 if d == -1 else d for d in config.dims))
            for name, config in self.input_configs.items() if config.optional
        }
        self.custom_tracing = self.parameter("enable_custom_tracing", "") == "true"
        self.nested_spans = int(self.parameter("nested_span_count", "0") or 0)
        self.single_activity_frequency = max(
            int(self.parameter("single_activity_frequency", "1") or 1), 1)
        self._creation_delay()

    def _creation_delay(self) -> None:
        """Sleep `creation_delay_sec` whole seconds, once the configuration is known good."""
        text = self.parameter("creation_delay_sec", "")
        if not text:
            return
        try:
            seconds = int(text)
        except ValueError:
            raise TritonError.invalid_arg(
                f"identity model '{self.name}': parameter creation_delay_sec must be a whole "
                f"number of seconds, got '{text}'") from None
        log.info("Creation delay is set to: %s", text)
        time.sleep(max(seconds, 0))


class IdentityInstanceState(ModelInstanceState):
    model_state: IdentityModelState

    def process_requests(self, requests: Sequence[Request]) -> None:
        if self.model_state.custom_tracing:
            for request in requests:
                self._report_custom_activities(request)
        super().process_requests(requests)

    def execute(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        state = self.model_state
        if state.delay_s:
            time.sleep(state.delay_s)
        mapping = state.output_for_input
        outputs = {mapping[name]: data for name, data in inputs.items()}
        wanted = self.requested_outputs
        missing = [(name, spec) for name, spec in state.zeros_for_missing.items()
                   if name not in outputs and (not wanted or name in wanted)]
        if missing:
            lead = ((next((len(d) for d in inputs.values() if d.ndim), 1),)
                    if state.max_batch_size > 0 else ())
            for name, (dtype, shape) in missing:
                outputs[name] = (np.full(lead + shape, b"", dtype) if dtype == np.object_
                                 else np.zeros(lead + shape, dtype))
        return outputs

    def _report_custom_activities(self, request: Request) -> None:
        """Triton's identity backend's example of a backend tracing its own activities."""
        if request.trace is None:
            return
        state = self.model_state
        report = request.trace.report_activity
        report("CUSTOM_ACTIVITY_START", time.perf_counter_ns())
        time.sleep(_CUSTOM_SPAN_S)
        report("CUSTOM_ACTIVITY_END", time.perf_counter_ns())
        report("CUSTOM_SINGLE_ACTIVITY", time.perf_counter_ns())
        for count in range(state.nested_spans):
            report(f"CUSTOM_ACTIVITY{count}_START", time.perf_counter_ns())
            time.sleep(_CUSTOM_SPAN_S)
            if count % state.single_activity_frequency == 0:
                report("CUSTOM_SINGLE_ACTIVITY", time.perf_counter_ns())
        for count in reversed(range(state.nested_spans)):
            report(f"CUSTOM_ACTIVITY{count}_END", time.perf_counter_ns())


def model_initialize(model: Model) -> None:
    IdentityModelState.create(model)


def model_instance_initialize(instance: ModelInstance) -> None:
    IdentityInstanceState.create(instance)


def model_instance_execute(instance: ModelInstance, requests: Sequence[Request]) -> None:
    instance.state.process_requests(requests)
