"""The instance's execute path (Triton's ModelInstanceState::ProcessRequests): executions to the
stub on the exec socket (one batch, or several single requests run one after the other), and
what the model's execute returned back to each request.

This runs on the instance's execute thread, with no thread hop and one frame each way: it is
the hot path of every ordinary request.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Sequence
from typing import Any

from tritium.backend import (
    REQUEST_RELEASE_RESCHEDULE,
    RESPONSE_COMPLETE_FINAL,
    Code,
    InferenceRequest,
    InferenceResponse,
    Tensor,
    TritonError,
    hold_wakeups,
    release_wakeups,
)

from ..wire import messages
from ..wire.cuda_ipc import CudaIpcArray
from ..wire.shm_tensors import Block, open_block
from .stub_link import StubLink

log = logging.getLogger("tritium.backends.python")


def process_requests(stub: StubLink, executions: Sequence[Sequence[InferenceRequest]]
                     ) -> None:
    """Hand the executions (each a batch for one call of the model's execute) to the stub in
    one message, and answer each request with what its execute returned as that execution
    ends (responses sent through a response sender are delivered first)."""
    conn = stub.exec_conn
    writer = stub.writer
    assert conn is not None and writer is not None
    table = stub.requests
    handles_of = stub.handles
    tensors: list[tuple[str, str, Any]] = []
    handles: list[list[int]] = []
    counts: list[int] = []
    device_inputs: list[list | None] = []
    rescheduled_handles = stub.rescheduled
    for requests in executions:
        execution_handles = []
        for request in requests:
            # A decoupled request the model rescheduled keeps its handle: the senders of
            # earlier executions still answer it (one response factory per request, as in
            # Triton).
            handle = (rescheduled_handles.pop(request, None) if rescheduled_handles else None
                      ) or next(handles_of)
            table[handle] = request
            execution_handles.append(handle)
            on_device = None
            before = len(tensors)
            for name, tensor in request.inputs.items():
                data = tensor.data
                if type(data) is CudaIpcArray:  # from a BLS caller's GPU: the stub maps it
                    if on_device is None:
                        on_device = []
                    on_device.append((name, data))
                else:
                    tensors.append((name, tensor.datatype, data))
            counts.append(len(tensors) - before)
            device_inputs.append(on_device)
        handles.append(execution_handles)
    fds: list[int] = []
    try:
        descriptors, block, fds = writer.pack(tensors)
        wire: list[list[tuple]] = []
        at = index = 0
        default_outputs = stub.output_names
        for requests in executions:
            execution = []
            for request, handle in zip(requests, handles[len(wire)], strict=True):
                count = counts[index]
                index += 1
                outputs = request.requested_outputs
                execution.append((
                    handle, request.id, request.correlation_id, request.flags,
                    request.timeout_us,
                    # Compact, as the JSON Triton's stub hands to `request.parameters()`.
                    json.dumps(request.parameters, separators=(",", ":"))
                    if request.parameters else "{}",
                    [o.name for o in outputs] if outputs else default_outputs,
                    descriptors[at : at + count],
                    device_inputs[index - 1],
                ))
                at += count
            wire.append(execution)
        mark = time.perf_counter_ns()
        for requests in executions:
            for request in requests:
                request.compute_input_end_ns = mark
        conn.send((messages.EXECUTE, wire, block), fds)
    except (EOFError, OSError):
        _stub_lost(stub, executions)
        return
    except Exception as exc:
        for execution_handles in handles:
            for handle in execution_handles:
                table.pop(handle, None)
        raise TritonError.internal(f"failed to send requests to the stub: {exc}") from exc
    finally:
        for fd in fds:
            os.close(fd)
        # The previous execution's held answers: the stub has this one now (or never will).
        release_wakeups()
    several = len(executions) > 1
    last = executions[-1]
    outcomes: list[tuple] = []
    for requests, execution_handles in zip(executions, handles, strict=True):
        if not outcomes:
            try:
                _, outcomes = conn.recv()  # the next executions' (a few at a time)
            except (EOFError, OSError):
                _stub_lost(stub, executions)
                return
            outcomes.reverse()
        outcome = outcomes.pop()
        if several:  # each its own execution: its own times, as the stub measured them
            start, end = outcome[6], outcome[7]
            for request in requests:
                request.exec_start_ns = request.compute_input_end_ns = start
                request.compute_output_start_ns = end
        else:
            mark = time.perf_counter_ns()
            for request in requests:
                request.compute_output_start_ns = mark
        if requests is last:
            # This call's closing answers: the frontends are woken once the instance's thread
            # has moved on to its next execution, not while it is on its way there.
            hold_wakeups()
        _answer(stub, requests, execution_handles, outcome, conn.fds)
        if several:
            mark = time.perf_counter_ns()
            for request in requests:
                request.exec_end_ns = mark


def _stub_lost(stub: StubLink, executions: Sequence[Sequence[InferenceRequest]]) -> None:
    """The stub went away during this call. Its death fails every request in its table, but a
    request this call put in the table after another thread's death handling had taken the
    table (the async reader, or Ray's actor shutting down) would be left open: those of this
    call's requests still open get the same 'not healthy' error here."""
    stub.on_death()
    for requests in executions:
        stub.fail_unanswered(requests)


def _answer(stub: StubLink, requests: Sequence[InferenceRequest], handles: list[int],
            outcome: tuple, fds: Any) -> None:
    """One execution's outcome: its responses to its requests, its rescheduled requests back
    to their scheduler, and the handles no longer needed out of the stub's table."""
    error, responses, async_sent, out_block, held, rescheduled = outcome[:6]
    table = stub.requests
    channel = stub.channel
    if async_sent > channel.processed:
        # Responses the model sent through a response sender come first.
        channel.wait_processed(async_sent)
    if error is not None:
        # Logged as Triton's stub logs it: the instance, the exception and where it came from.
        log.error("%s", error)
        failure = TritonError.internal(error)
        for request in requests:
            sender = request.response_sender
            if sender is None or sender.is_completed:
                continue
            if not stub.decoupled and sender.has_responded:
                # A non-decoupled request's answer is its first response: as Triton does,
                # the failure after it is not sent (only the end of the request).
                sender.send(None, RESPONSE_COMPLETE_FINAL)
            else:
                request.respond_error(failure)
    elif responses is not None:
        assert stub.from_stub is not None
        response_block = (None if out_block is None
                          else open_block(out_block, stub.from_stub, fds))
        try:
            for request, wire_response in zip(requests, responses, strict=True):
                if wire_response is not None:
                    sender = request.response_sender
                    assert sender is not None  # every request the server hands over has one
                    sender.send(
                        response_from_wire(wire_response, response_block),
                        RESPONSE_COMPLETE_FINAL,
                    )
        finally:
            if response_block is not None:
                response_block.release()
    for index in rescheduled:
        _reschedule(stub, requests[index], handles[index])
    if stub.decoupled:
        for handle, request in zip(handles, requests, strict=True):
            sender = request.response_sender
            if sender is None or sender.is_completed:
                table.pop(handle, None)
    else:
        # Requests the model answers later through its response sender (Triton waits for
        # them) stay in the table until their final response; the others leave it now.
        for index in held:
            requests[index].answered_later = True
        for index, handle in enumerate(handles):
            sender = requests[index].response_sender
            if index not in held or sender is None or sender.is_completed:
                table.pop(handle, None)


def _reschedule(stub: StubLink, request: InferenceRequest, handle: int) -> None:
    """The model called `set_release_flags(TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)`: release
    the request so (Triton's TRITONBACKEND_RequestRelease with that flag). A model whose
    scheduler cannot run it again gets Triton's error logged as Triton logs it, and answered
    (Triton 2.51 leaves that request without an answer)."""
    try:
        request.release(REQUEST_RELEASE_RESCHEDULE)
    except TritonError as err:
        log.error("Failed to release request: %s", err.message)
        sender = request.response_sender
        if sender is not None and not sender.is_completed:
            request.respond_error(err)
        return
    if stub.decoupled:
        stub.rescheduled[request] = handle


def response_from_wire(wire: tuple, block: Block | None) -> InferenceResponse:
    """A response from the stub, its tensors copied out of shared memory."""
    descriptors, error, parameters = wire
    outputs = []
    if descriptors:
        assert block is not None
        array = block.array
        for name, datatype, shape, offset, nbytes in descriptors:
            outputs.append(Tensor(name, datatype, shape,
                                  array(datatype, shape, offset, nbytes, True)))
    response = InferenceResponse(outputs=outputs)
    if error is not None:
        code, message = error
        response.error = TritonError(Code[code], message)
    if parameters:
        response.parameters = json.loads(parameters)
    return response
