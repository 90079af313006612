"""What crosses between a Tritium server and an instance actor: requests, responses, errors.

Plain tuples of picklable parts, so Ray serialises them with its own serializer: numpy arrays
travel out of band (large ones through the object store, read without a copy on the other
side), everything else inline. TritonError carries its code and message as a pair (the
exception itself does not pickle).
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import Code, TritonError, as_triton_error
from ..request import InferenceRequest, InferenceResponse, RequestedOutput

# (key, id, inputs, [(output name, parameters)], parameters, correlation id, flags,
#  priority, timeout_us, batch_size)
RequestWire = tuple
# (outputs, error or None, parameters)
ResponseWire = tuple
ErrorWire = tuple  # (code name, message)


def error_to_wire(error: BaseException) -> ErrorWire:
    triton = as_triton_error(error)
    return (triton.code.name, triton.message)


def error_from_wire(wire: ErrorWire) -> TritonError:
    code, message = wire
    return TritonError(Code[code], message)


def request_to_wire(key: int, request: InferenceRequest) -> RequestWire:
    return (
        key, request.id, list(request.inputs.values()),
        [(o.name, o.parameters) for o in request.requested_outputs],
        request.parameters, request.correlation_id, request.flags, request.priority,
        request.timeout_us, request.batch_size,
    )


def request_from_wire(
    wire: RequestWire, model_name: str, version: int,
    factory: Callable[..., InferenceRequest] = InferenceRequest,
) -> tuple[int, InferenceRequest]:
    """(key, request) for the model the actor serves; `factory` builds the request object."""
    (key, request_id, inputs, outputs, parameters, correlation_id, flags, priority,
     timeout_us, batch_size) = wire
    request = factory(
        model_name, version, id=request_id, inputs={t.name: t for t in inputs},
        requested_outputs=[RequestedOutput(name, params) for name, params in outputs],
        parameters=parameters, correlation_id=correlation_id, flags=flags,
        priority=priority, timeout_us=timeout_us,
    )
    request.batch_size = batch_size
    return key, request


def response_to_wire(response: InferenceResponse | None) -> ResponseWire | None:
    if response is None:
        return None
    error = None if response.error is None else error_to_wire(response.error)
    return (response.outputs, error, response.parameters)


def response_from_wire(wire: ResponseWire | None) -> InferenceResponse | None:
    if wire is None:
        return None
    outputs, error, parameters = wire
    return InferenceResponse(
        outputs=list(outputs), parameters=dict(parameters),
        error=None if error is None else error_from_wire(error),
    )


def bls_request_to_wire(request: InferenceRequest) -> tuple[str, int, RequestWire]:
    """A request a model makes (BLS) for any model the owning server serves."""
    return (request.model_name, request.model_version, request_to_wire(0, request))


def bls_request_from_wire(wire: tuple[str, int, RequestWire]) -> InferenceRequest:
    name, version, request = wire
    return request_from_wire(request, name, version)[1]

