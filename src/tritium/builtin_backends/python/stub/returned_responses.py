"""What a model's `execute` gave back (Triton's ProcessReturnedResponses), and the requests it
left to answer later.

The returned list is checked as Triton checks it, in Triton's words; each response counts as
its request's final one; only the outputs a request asked for go back (Triton's
PruneOutputTensors), all packed in one block of the out-ring. A request left unanswered whose
response sender the model keeps is answered later through it. Its own module because this is
the contract between a model's return value and the server, apart from running the model.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

from ..wire import messages
from ..wire.shm_tensors import TensorWriter
from .pb_wire import WIRE_OF_CODE, wire_response
from .stub_errors import StubError

# pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE: the model asks for the request again.
RELEASE_RESCHEDULE = 2


def held_senders(requests: list) -> list[int]:
    """Indexes of the unanswered requests whose response sender the model still holds after
    execute returned (None, or None in their place): it answers them later (Triton waits for
    that). A sender nothing refers to any more can never answer: that request fails at once
    instead of waiting."""
    open_senders = [(index, weakref.ref(request._response_sender))
                    for index, request in enumerate(requests)
                    if not request._response_sender._is_closed()]
    if not open_senders:
        return []
    requests.clear()  # the stub's own references: only the model's remain
    if any(ref() is not None for _, ref in open_senders):
        gc.collect()  # requests and senders may refer to each other
    return [index for index, ref in open_senders
            if (sender := ref()) is not None and not sender._is_closed()]


def returned_responses(pb: Any, writer: TensorWriter, model_name: str, decoupled: bool,
                       requests: list, returned: Any) -> tuple:
    """Triton's ProcessReturnedResponses: check what execute returned, count each response
    as its request's final one, prune the outputs nobody asked for, and pack them all in
    one block. -> (wire responses, block, fds)."""
    if decoupled:
        raise StubError(
            f"Python model '{model_name}' is using the decoupled mode and the execute "
            "function must return None."
        )
    if not isinstance(returned, list):
        raise StubError(
            f"Expected a list in the execute return, found type '{type(returned)}'."
        )
    if len(returned) != len(requests):
        raise StubError(
            "Number of InferenceResponse objects do not match the number of "
            f"InferenceRequest objects. InferenceRequest(s) size is:{len(requests)}, and "
            f"InferenceResponse(s) size is:{len(returned)}\n"
        )
    Response = pb.InferenceResponse
    for request, response in zip(requests, returned, strict=True):
        if response is None:
            continue
        if request._release_flags == RELEASE_RESCHEDULE:
            raise StubError(
                "Expected a None object in the execute function return list for "
                f"reschduled request, found type '{type(response)}'."
            )
        if not isinstance(response, Response):
            raise StubError(
                "Expected an 'InferenceResponse' object in the execute function return "
                f"list, found type '{type(response)}'."
            )
        try:
            request._response_sender._update_state(response, messages.FINAL)
        except pb.TritonModelException as exc:
            raise StubError(str(exc)) from None
    tensors: list = []
    counts: list[int] = []
    wire_of = WIRE_OF_CODE
    for request, response in zip(requests, returned, strict=True):
        if response is None:
            counts.append(-1)
            continue
        count = 0
        if response._error is None:
            # Triton's PruneOutputTensors: only what the request asked for goes back.
            wanted = request._requested_output_names
            for tensor in response._output_tensors:
                if tensor._name in wanted:
                    array = tensor._array
                    if array is None:  # GPU memory: copied to the host once, for the wire
                        array = tensor._host_array()
                    tensors.append((tensor._name, wire_of[tensor._dtype], array))
                    count += 1
        counts.append(count)
    descriptors, block, fds = writer.pack(tensors)
    wire: list = []
    at = 0
    for response, count in zip(returned, counts, strict=True):
        if count < 0:
            wire.append(None)
            continue
        wire.append(wire_response(response, descriptors[at : at + count]))
        at += count
    return wire, block, fds
