"""Unit tests of triton_python_backend_utils' errors, InferenceResponse and InferenceRequest
(BLS and as the server hands them over). Expected messages are Triton 2.51's words (its stub)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import triton_python_backend_utils as pb_utils

# `no_runtime` is autouse: every test here starts and ends with no runtime set.
from support.pb_utils_fake_runtime import no_runtime, response, rt, server_request  # noqa: F401

# --- errors ---------------------------------------------------------------------------------


def test_triton_error():
    error = pb_utils.TritonError("boom")
    assert error.message() == "boom"
    assert error.code() == pb_utils.TritonError.INTERNAL == 1
    found = pb_utils.TritonError("gone", pb_utils.TritonError.NOT_FOUND)
    assert found.code() == 2
    codes = [
        pb_utils.TritonError.UNKNOWN,
        pb_utils.TritonError.INTERNAL,
        pb_utils.TritonError.NOT_FOUND,
        pb_utils.TritonError.INVALID_ARG,
        pb_utils.TritonError.UNAVAILABLE,
        pb_utils.TritonError.UNSUPPORTED,
        pb_utils.TritonError.ALREADY_EXISTS,
        pb_utils.TritonError.CANCELLED,
    ]
    assert codes == list(range(8))
    with pytest.raises(TypeError):
        pb_utils.TritonError(None)
    with pytest.raises(TypeError):
        pb_utils.TritonError("m", 42)
    exception = pb_utils.TritonModelException("bad")
    assert isinstance(exception, Exception) and str(exception) == "bad"


# --- responses ------------------------------------------------------------------------------


def test_inference_response():
    empty = pb_utils.InferenceResponse()
    assert empty.output_tensors() == [] and not empty.has_error() and empty.error() is None
    assert empty.parameters() == "{}"
    failed = pb_utils.InferenceResponse(error=pb_utils.TritonError("no"))
    assert failed.has_error() and failed.error().message() == "no"
    with_params = pb_utils.InferenceResponse(parameters={"a": 1, "b": True, "c": "x"})
    assert json.loads(with_params.parameters()) == {"a": 1, "b": True, "c": "x"}
    reply = response("A")
    reply.output_tensors().clear()
    assert len(reply.output_tensors()) == 1


def test_inference_response_errors():
    with pytest.raises(pb_utils.TritonModelException) as e:
        pb_utils.InferenceResponse(output_tensors=[None])
    assert str(e.value) == "Output tensor for inference response should not be empty."
    with pytest.raises(TypeError):
        pb_utils.InferenceResponse(output_tensors=pb_utils.Tensor("A", np.zeros(1)))
    with pytest.raises(TypeError):
        pb_utils.InferenceResponse(error="not a TritonError")
    with pytest.raises(pb_utils.TritonModelException) as e:
        pb_utils.InferenceResponse(parameters=[1])
    assert str(e.value) == "Expect N8pybind114dictE, got <class 'list'>"
    with pytest.raises(pb_utils.TritonModelException) as e:
        pb_utils.InferenceResponse(parameters={1: 1})
    assert str(e.value) == "Expect parameters keys to have type str, found type <class 'int'>"
    with pytest.raises(pb_utils.TritonModelException) as e:
        pb_utils.InferenceResponse(parameters={"a": 1.5})
    assert str(e.value) == (
        "Expect parameters values to have type bool/int/str, found type <class 'float'>"
    )


# --- requests -------------------------------------------------------------------------------


def test_bls_request_construction():
    tensor = pb_utils.Tensor("IN", np.zeros(2, np.float32))
    positional = pb_utils.InferenceRequest("id1", 5, [tensor], ["OUT"], "model")
    assert positional.request_id() == "id1" and positional.correlation_id() == 5
    request = pb_utils.InferenceRequest(
        model_name="model",
        inputs=[tensor],
        requested_output_names=["B", "A", "A"],
        parameters={"k": 1},
    )
    assert request.requested_output_names() == {"A", "B"}
    assert request.request_id() == "" and request.correlation_id() == 0
    assert request.flags() == 0 and request.timeout() == 0
    assert request.parameters() == '{"k": 1}'
    assert [t.name() for t in request.inputs()] == ["IN"]
    assert request.trace().get_context() is None
    assert request._model_name == "model" and request._model_version == -1
    request.set_flags(pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END)
    assert request.flags() == 2
    string_id = pb_utils.InferenceRequest(
        model_name="m", inputs=[], requested_output_names=[], correlation_id="seq-1"
    )
    assert string_id.correlation_id() == "seq-1"
    assert string_id.parameters() == "{}"
    assert not string_id.is_cancelled()


def test_bls_request_errors():
    tensor = pb_utils.Tensor("IN", np.zeros(2, np.float32))
    with pytest.raises(TypeError):
        pb_utils.InferenceRequest(inputs=[tensor], requested_output_names=["a"])
    with pytest.raises(TypeError):
        pb_utils.InferenceRequest(model_name="m", inputs=[tensor], requested_output_names="a")
    with pytest.raises(pb_utils.TritonModelException) as e:
        pb_utils.InferenceRequest(
            model_name="m", inputs=[tensor], requested_output_names=["a"], correlation_id=1.5
        )
    assert str(e.value) == "Correlation ID must be integer or string"
    with pytest.raises(pb_utils.TritonModelException) as e:
        pb_utils.InferenceRequest(model_name="m", inputs=[tensor], requested_output_names=[""])
    assert str(e.value) == (
        "Requested output name for request with id '' and model name 'm' should not be empty."
    )
    with pytest.raises(pb_utils.TritonModelException) as e:
        pb_utils.InferenceRequest(
            request_id="x", model_name="m", inputs=[None], requested_output_names=["a"]
        )
    assert str(e.value) == (
        "Input tensor for request with id 'x' and model name 'm' should not be empty."
    )
    with pytest.raises(pb_utils.TritonModelException) as e:
        pb_utils.InferenceRequest(
            model_name="m", inputs=[tensor], requested_output_names=["a"], parameters={"a": None}
        )
    assert "bool/int/str" in str(e.value)


def test_bls_request_response_sender_refuses(rt):
    request = pb_utils.InferenceRequest(model_name="m", inputs=[], requested_output_names=["a"])
    with pytest.raises(pb_utils.TritonModelException) as e:
        request.get_response_sender().send(pb_utils.InferenceResponse())
    assert str(e.value) == (
        "Unable to send response. Response sender has no reference to the decoupled state of "
        "the model."
    )
    assert rt.calls == []


def test_server_request_accessors():
    request = server_request(names=("OUT", "OUT2"))
    assert request.request_id() == "r1"
    assert request.correlation_id() == 7
    assert request.flags() == pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START
    assert request.timeout() == 500
    assert request.parameters() == '{"k":"v"}'
    assert request.requested_output_names() == {"OUT", "OUT2"}
    assert request.inputs()[0].name() == "IN"
    assert request.get_response_sender() is request.get_response_sender()
    assert request._release_flags == pb_utils.TRITONSERVER_REQUEST_RELEASE_ALL
    request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
    assert request._release_flags == pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE
