"""BLS on the server side (Triton's request_executor.cc): a request a model makes with
`pb_utils.InferenceRequest(...).exec()` is routed through the server like any client's, and
its responses are written back to the stub as they come."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import partial
from typing import Any, cast

from tritium.backend import (
    RESPONSE_COMPLETE_FINAL,
    Code,
    InferenceRequest,
    InferenceResponse,
    RequestedOutput,
    Tensor,
    TritonError,
)

from ..wire import messages
from ..wire.shm_tensors import open_block, read_tensors
from .stub_link import Endpoint, StubLink

Delivery = Callable[[InferenceResponse | None, int], None]


class RequestExecutor:
    """Runs the BLS requests that come on one channel of a stub (`endpoint`: the stub's async
    socket, or the channel of a process forked from it)."""

    def __init__(self, stub: StubLink, endpoint: Endpoint) -> None:
        self.stub = stub
        self.endpoint = endpoint
        # The requests not finally answered yet, by their BLS id (for `cancel`). One dict
        # operation at a time, each atomic under the GIL.
        self._in_flight: dict[int, InferenceRequest] = {}

    def cancel(self, bls_id: int) -> None:
        """ResponseIterator.cancel() in the stub: the request is cancelled, as a client's
        would be (the callee sees request.is_cancelled(); a queued one is answered
        CANCELLED). Nothing happens once it was finally answered."""
        request = self._in_flight.get(bls_id)
        if request is not None:
            request.cancelled = True

    def on_bls(self, message: tuple) -> None:
        """A BLS message from the stub: build the request, hand it to the server."""
        _, bls_id, wire, decoupled, block_descriptor = message
        (model_name, model_version, request_id, correlation_id, flags, timeout_us,
         parameters, output_names, descriptors, device_inputs, traced_by) = wire
        stub = self.stub
        endpoint = self.endpoint
        assert endpoint.async_conn is not None
        block = open_block(block_descriptor, endpoint.from_stub, endpoint.async_conn.fds)
        inputs = {}
        try:
            for name, datatype, array in read_tensors(descriptors, block, True):
                inputs[name] = Tensor(name, datatype, tuple(array.shape), array)
        finally:
            if block is not None:
                block.release()
        for name, array in device_inputs:
            # GPU memory the callee (a python model taking GPU inputs) maps itself.
            inputs[name] = Tensor(name, array.datatype, array.shape, cast(Any, array))

        deliver: Callable[[InferenceResponse | None, int], None]
        if decoupled:
            deliver = partial(self._send_response, bls_id)
        else:
            deliver = self._single_response_delivery(bls_id, model_name)

        try:
            request = InferenceRequest(
                model_name,
                model_version,
                id=request_id,
                inputs=inputs,
                requested_outputs=[RequestedOutput(name) for name in output_names],
                parameters=json.loads(parameters) if parameters and parameters != "{}" else {},
                correlation_id=correlation_id,
                flags=flags,
                timeout_us=timeout_us,
            )
            if traced_by is not None:
                # `trace=request.trace()`: a child of that request's trace, if it has one.
                parent = stub.requests.get(traced_by)
                if parent is not None and parent.trace is not None:
                    request.trace = parent.trace.child()
            self._in_flight[bls_id] = request
            stub.server.infer_async(request, deliver)
        except Exception as exc:
            self._in_flight.pop(bls_id, None)
            error = exc if isinstance(exc, TritonError) else TritonError.internal(str(exc))
            text = error.message
            if error.code in (Code.NOT_FOUND, Code.UNAVAILABLE):
                # Triton's python backend checks readiness before routing, in these words.
                text = (
                    f"Failed for execute the inference request. Model '{model_name}' is not "
                    "ready."
                )
            self._send_response(bls_id, InferenceResponse(error=TritonError(
                error.code, f"Model {model_name} - Error when running inference: {text}"
            )), RESPONSE_COMPLETE_FINAL)

    def _single_response_delivery(self, bls_id: int, model_name: str) -> Delivery:
        """Delivery for `exec(decoupled=False)`: one response, with the final flag. A model
        that answers otherwise is decoupled, which such a call does not support (Triton
        checks the model's policy before routing; the server API tells us by the answer)."""
        refused = False

        def deliver(response: InferenceResponse | None, flags: int) -> None:
            nonlocal refused
            if refused:
                return
            if response is not None and flags & RESPONSE_COMPLETE_FINAL:
                self._send_response(bls_id, response, flags)
                return
            refused = True
            self._send_response(bls_id, InferenceResponse(error=TritonError.internal(
                f"Model {model_name} - Error when running inference: Model {model_name} is "
                "using the decoupled. The current BLS request call doesn't support models "
                "using the decoupled transaction policy. Please use 'decoupled=True' argument "
                "to the 'exec' or 'async_exec' calls for decoupled models.'"
            )), RESPONSE_COMPLETE_FINAL)

        return deliver

    def _send_response(self, bls_id: int, response: InferenceResponse | None,
                       flags: int) -> None:
        if flags & RESPONSE_COMPLETE_FINAL:
            self._in_flight.pop(bls_id, None)
        endpoint = self.endpoint
        if self.stub.dead or endpoint.writer is None or endpoint.async_conn is None:
            return
        fds: list[int] = []
        wire = block = None
        try:
            if response is not None:
                error = response.error
                tensors = (
                    [(t.name, t.datatype, t.data) for t in response.outputs]
                    if error is None else []
                )
                descriptors, block, fds = endpoint.writer.pack(tensors)
                wire = (
                    descriptors,
                    None if error is None else (error.code.name, error.message),
                    json.dumps(response.parameters) if response.parameters else None,
                )
            endpoint.async_conn.send((messages.BLS_RESPONSE, bls_id, wire, flags, block), fds)
        except OSError:
            pass  # the stub has gone; its reader thread deals with that
        finally:
            for fd in fds:
                os.close(fd)
