"""Unit tests of triton_python_backend_utils: the pure parts, and a fake runtime in place of
the stub. Expected messages are Triton 2.51's words (its resource file and stub)."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import struct

import numpy as np
import pytest

import triton_python_backend_utils as pb_utils


class FakeRuntime:
    """Records what the module asks of the server."""

    def __init__(self):
        self.calls = []
        self.cancelled = False
        self.bls_response = pb_utils.InferenceResponse(
            output_tensors=[pb_utils.Tensor("OUT", np.array([1.0], np.float32))]
        )
        self.fail_with = None
        self.metric_values = {}

    def _record(self, *call):
        self.calls.append(call)
        if self.fail_with is not None:
            raise pb_utils.TritonModelException(self.fail_with)

    def send_response(self, request_handle, response, flags):
        self._record("send_response", request_handle, response, flags)

    def is_cancelled(self, request_handle):
        self._record("is_cancelled", request_handle)
        return self.cancelled

    def bls_exec(self, request, decoupled):
        self._record("bls_exec", request, decoupled)
        return iter([self.bls_response]) if decoupled else self.bls_response

    def bls_async_exec(self, request, decoupled):
        self._record("bls_async_exec", request, decoupled)

        async def run():
            return self.bls_exec(request, decoupled)

        return run()

    def log(self, level, message, filename, line):
        self._record("log", level, message, filename, line)

    def metric_family_new(self, name, description, kind):
        self._record("metric_family_new", name, description, kind)
        return f"family:{name}"

    def metric_new(self, family_handle, labels, buckets):
        self._record("metric_new", family_handle, labels, buckets)
        handle = f"metric:{family_handle}:{json.dumps(labels, sort_keys=True)}"
        self.metric_values.setdefault(handle, 0.0)
        return handle

    def metric_update(self, metric_handle, op, value):
        self._record("metric_update", metric_handle, op, value)
        if op == "set":
            self.metric_values[metric_handle] = value
        else:
            self.metric_values[metric_handle] += value

    def metric_value(self, metric_handle):
        self._record("metric_value", metric_handle)
        return self.metric_values[metric_handle]

    def metric_family_delete(self, handle):
        self._record("metric_family_delete", handle)

    def metric_delete(self, handle):
        self._record("metric_delete", handle)

    def load_model(self, name, config, files):
        self._record("load_model", name, config, files)

    def unload_model(self, name, unload_dependents):
        self._record("unload_model", name, unload_dependents)

    def is_model_ready(self, name, version):
        self._record("is_model_ready", name, version)
        return True


@pytest.fixture(autouse=True)
def no_runtime():
    pb_utils._set_runtime(None)
    yield
    gc.collect()  # MetricFamily objects of a test are deleted while its runtime is set
    pb_utils._set_runtime(None)


@pytest.fixture
def rt():
    runtime = FakeRuntime()
    pb_utils._set_runtime(runtime, "/models/m/1")
    return runtime


def server_request(decoupled=False, names=("OUT",), handle="h1", **kw):
    args = dict(
        inputs=[pb_utils.Tensor("IN", np.array([1, 2], np.int32))],
        requested_output_names=names,
        request_id="r1",
        correlation_id=7,
        flags=pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START,
        timeout_us=500,
        parameters_json='{"k":"v"}',
        decoupled=decoupled,
    )
    args.update(kw)
    return pb_utils.InferenceRequest._from_server(handle, **args)


def response(*names):
    return pb_utils.InferenceResponse(
        output_tensors=[pb_utils.Tensor(n, np.array([1], np.int8)) for n in names]
    )


# --- dtype maps and constants ---------------------------------------------------------------


def test_dtype_maps():
    assert pb_utils.triton_to_numpy_type(11) is np.float32
    assert pb_utils.triton_to_numpy_type(13) is np.object_
    assert pb_utils.triton_to_numpy_type(14) is None
    assert pb_utils.numpy_to_triton_type(np.float32) == 11
    assert pb_utils.numpy_to_triton_type(np.dtype("int64")) == 9
    assert pb_utils.numpy_to_triton_type(np.bool_) == 1
    assert pb_utils.numpy_to_triton_type(np.object_) == 13
    assert pb_utils.numpy_to_triton_type(np.bytes_) == 13
    assert pb_utils.numpy_to_triton_type(np.complex64) is None
    assert pb_utils.triton_string_to_numpy("TYPE_FP16") is np.float16
    assert pb_utils.TRITON_STRING_TO_NUMPY["TYPE_BOOL"] is bool
    assert pb_utils.TRITON_STRING_TO_NUMPY["TYPE_STRING"] is np.object_


def test_constants():
    assert pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START == 1
    assert pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END == 2
    assert pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL == 1
    assert pb_utils.TRITONSERVER_REQUEST_RELEASE_ALL == 1
    assert pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE == 2
    assert pb_utils.TRITONSERVER_MEMORY_GPU == 0
    assert pb_utils.TRITONSERVER_MEMORY_CPU == 1
    memory = pb_utils.PreferredMemory(pb_utils.TRITONSERVER_MEMORY_CPU)
    assert memory.preferred_memory_type == pb_utils.TRITONSERVER_MEMORY_CPU
    assert memory.preferred_device_id == 0


# --- BYTES (de)serialisation ----------------------------------------------------------------


def test_serialize_byte_tensor_wire_form():
    data = np.array([[b"ab", "c\u00e9"], [3, b""]], dtype=object)
    wire = pb_utils.serialize_byte_tensor(data)
    expected = b"".join(
        struct.pack("<I", len(x)) + x for x in (b"ab", "c\u00e9".encode(), b"3", b"")
    )
    assert wire == expected
    decoded = pb_utils.deserialize_bytes_tensor(wire)
    assert decoded.dtype == np.object_
    assert list(decoded) == [b"ab", "c\u00e9".encode(), b"3", b""]


def test_serialize_byte_tensor_edge_cases():
    assert pb_utils.serialize_byte_tensor(np.array([], dtype=object)) == ()
    assert pb_utils.serialize_byte_tensor(np.array([1, 2], np.int32)) is None
    fixed = np.array([b"x", b"yz"])  # numpy 'S' dtype
    assert pb_utils.serialize_byte_tensor(fixed) == b"\x01\x00\x00\x00x\x02\x00\x00\x00yz"
    # Fortran-ordered input is still written in C order.
    f_order = np.asfortranarray(np.array([[b"a", b"b"], [b"c", b"d"]], dtype=object))
    assert list(pb_utils.deserialize_bytes_tensor(pb_utils.serialize_byte_tensor(f_order))) == [
        b"a", b"b", b"c", b"d"
    ]


def test_deserialize_accepts_uint8_array():
    wire = np.frombuffer(b"\x02\x00\x00\x00hi", dtype=np.uint8)
    assert list(pb_utils.deserialize_bytes_tensor(wire)) == [b"hi"]
    assert pb_utils.deserialize_bytes_tensor(b"").shape == (0,)


# --- model-config helpers -------------------------------------------------------------------

CONFIG = {
    "name": "m",
    "max_batch_size": 0,
    "input": [{"name": "IN", "data_type": "TYPE_FP32", "dims": [4]}],
    "output": [{"name": "OUT", "data_type": "TYPE_INVALID", "dims": []}],
}


def model_config(**changes):
    return pb_utils.ModelConfig(json.dumps({**CONFIG, **changes}))


def test_config_lookups():
    assert pb_utils.get_input_config_by_name(CONFIG, "IN")["dims"] == [4]
    assert pb_utils.get_output_config_by_name(CONFIG, "OUT")["name"] == "OUT"
    assert pb_utils.get_input_config_by_name(CONFIG, "NOPE") is None
    assert pb_utils.get_output_config_by_name({}, "OUT") is None
    assert pb_utils.using_decoupled_model_transaction_policy(CONFIG) is False
    policy = {"model_transaction_policy": {"decoupled": True}}
    assert pb_utils.using_decoupled_model_transaction_policy(policy) is True


def test_tensor_by_name_helpers():
    request = server_request()
    assert pb_utils.get_input_tensor_by_name(request, "IN").name() == "IN"
    assert pb_utils.get_input_tensor_by_name(request, "X") is None
    reply = response("A", "B")
    assert pb_utils.get_output_tensor_by_name(reply, "B").name() == "B"
    assert pb_utils.get_output_tensor_by_name(reply, "C") is None


def test_model_config_max_batch_size_and_dynamic_batching():
    config = model_config()
    config.set_max_batch_size(8)
    config.set_dynamic_batching()
    assert config.as_dict()["max_batch_size"] == 8
    assert config.as_dict()["dynamic_batching"] == {}
    with pytest.raises(ValueError) as e:
        model_config(max_batch_size=16).set_max_batch_size(4)
    assert str(e.value) == (
        "configuration specified max_batch_size 16, but in auto-complete-config function for "
        "model 'm' specified max_batch_size 4"
    )
    with pytest.raises(ValueError) as e:
        model_config(sequence_batching={}).set_dynamic_batching()
    assert str(e.value) == (
        "Configuration specified scheduling_choice as 'sequence_batching', but "
        "auto-complete-config function for model 'm' tries to set scheduling_choice as "
        "'dynamic_batching'"
    )


def test_model_config_add_input_and_output():
    config = model_config()
    config.add_input({"name": "IN", "data_type": "TYPE_FP32", "dims": [4], "optional": True})
    config.add_input({"name": "IN2", "data_type": "TYPE_INT32", "dims": [-1]})
    config.add_output({"name": "OUT", "data_type": "TYPE_FP32", "dims": [2]})
    as_dict = config.as_dict()
    assert as_dict["input"][0]["optional"] is True
    assert [i["name"] for i in as_dict["input"]] == ["IN", "IN2"]
    assert as_dict["output"] == [{"name": "OUT", "data_type": "TYPE_FP32", "dims": [2]}]


@pytest.mark.parametrize(
    "kind, tensor, message",
    [
        (
            "input",
            {"name": "X", "data_type": "TYPE_FP32", "dims": [1], "format": "x"},
            "input 'X' in auto-complete-config function for model 'm' contains property "
            "other than 'name', 'data_type', 'dims' and 'optional'.",
        ),
        (
            "output",
            {"name": "X", "data_type": "TYPE_FP32", "dims": [1], "optional": True},
            "output 'X' in auto-complete-config function for model 'm' contains property "
            "other than 'name', 'data_type' and 'dims'.",
        ),
        (
            "input",
            {"data_type": "TYPE_FP32", "dims": [1]},
            "input in auto-complete-config function for model 'm' is missing 'name' property.",
        ),
        (
            "output",
            {"name": "X", "dims": [1]},
            "output 'X' in auto-complete-config function for model 'm' is missing "
            "'data_type' property.",
        ),
        (
            "input",
            {"name": "X", "data_type": "TYPE_FP32"},
            "input 'X' in auto-complete-config function for model 'm' is missing 'dims' "
            "property.",
        ),
        (
            "input",
            {"name": "IN", "data_type": "TYPE_INT8", "dims": [4]},
            "unable to load model 'm', configuration expects datatype TYPE_FP32 for input "
            "'IN', model provides TYPE_INT8",
        ),
        (
            "input",
            {"name": "IN", "data_type": "TYPE_FP32", "dims": [5]},
            "model 'm', tensor 'IN': the model expects dims [5] but the model configuration "
            "specifies dims [4]",
        ),
    ],
)
def test_model_config_tensor_errors(kind, tensor, message):
    config = model_config()
    add = config.add_input if kind == "input" else config.add_output
    with pytest.raises(ValueError) as e:
        add(tensor)
    assert str(e.value) == message


def test_model_config_optional_mismatch():
    config = model_config(
        input=[{"name": "IN", "data_type": "TYPE_FP32", "dims": [4], "optional": False}]
    )
    with pytest.raises(ValueError) as e:
        config.add_input({"name": "IN", "data_type": "TYPE_FP32", "dims": [4], "optional": True})
    assert str(e.value) == (
        "model 'm', tensor 'IN': the model expects optional True but the model configuration "
        "specifies optional False"
    )


def test_model_config_transaction_policy():
    config = model_config()
    config.set_model_transaction_policy({"decoupled": True})
    assert pb_utils.using_decoupled_model_transaction_policy(config.as_dict())
    with pytest.raises(ValueError) as e:
        config.set_model_transaction_policy({"decoupled": False})
    assert str(e.value) == (
        "trying to change decoupled property in auto-complete-config for model 'm', which is "
        "already set to 'True'."
    )
    with pytest.raises(ValueError) as e:
        config.set_model_transaction_policy({"other": 1})
    assert str(e.value) == (
        "model transaction property in auto-complete-config function for model 'm' contains "
        "property other than 'decoupled'."
    )


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


# --- tensors --------------------------------------------------------------------------------


def test_tensor_basics():
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    tensor = pb_utils.Tensor("T", array)
    assert tensor.name() == "T"
    assert tensor.as_numpy() is array
    assert tensor.triton_dtype() == 11
    assert tensor.shape() == [2, 3]
    assert tensor.is_cpu()
    transposed = pb_utils.Tensor("T", array.T)
    assert transposed.as_numpy().flags.c_contiguous
    np.testing.assert_array_equal(transposed.as_numpy(), array.T)


def test_tensor_bytes():
    assert pb_utils.Tensor("S", np.array([b"a"], dtype=object)).triton_dtype() == 13
    assert pb_utils.Tensor("S", np.array([b"abc"])).triton_dtype() == 13
    with pytest.raises(pb_utils.TritonModelException) as e:
        pb_utils.Tensor("S", np.array([b"a"], dtype=object)).to_dlpack()
    assert str(e.value) == "DLPack does not have support for string tensors."


@pytest.mark.parametrize(
    "array",
    [np.array(["text"]), np.zeros(2, np.complex64), np.zeros(2, ">f4")],
)
def test_tensor_unsupported_dtypes(array):
    with pytest.raises(pb_utils.TritonModelException) as e:
        pb_utils.Tensor("T", array)
    assert str(e.value) == "NumPy dtype is not supported."


def test_tensor_argument_errors():
    with pytest.raises(pb_utils.TritonModelException) as e:
        pb_utils.Tensor("", np.zeros(1))
    assert str(e.value) == "Tensor name cannot be an empty string."
    with pytest.raises(TypeError):
        pb_utils.Tensor("T", [1, 2, 3])  # Triton wants an ndarray too


def test_tensor_dlpack_round_trip_shares_memory():
    array = np.arange(4, dtype=np.int64)
    tensor = pb_utils.Tensor("A", array)
    back = pb_utils.Tensor.from_dlpack("B", tensor.to_dlpack())
    assert back.name() == "B" and back.triton_dtype() == 9
    array[0] = 42
    assert back.as_numpy()[0] == 42
    view = np.from_dlpack(tensor)  # Tensor implements __dlpack__ itself
    view[1] = 43
    assert array[1] == 43
    flags = pb_utils.Tensor.from_dlpack("F", np.array([True, False]))
    assert flags.triton_dtype() == 1
    assert list(flags.as_numpy()) == [True, False]


def test_tensor_dlpack_of_read_only_array():
    array = np.arange(3, dtype=np.float32)
    array.flags.writeable = False
    back = pb_utils.Tensor.from_dlpack("B", pb_utils.Tensor("A", array).to_dlpack())
    np.testing.assert_array_equal(back.as_numpy(), array)


def test_tensor_from_dlpack_errors():
    with pytest.raises(pb_utils.TritonModelException) as e:
        pb_utils.Tensor.from_dlpack("T", np.arange(6).reshape(2, 3).T)
    assert str(e.value) == (
        "DLPack tensor is not contiguous. Only contiguous DLPack tensors that are stored in "
        "C-Order are supported."
    )
    with pytest.raises(pb_utils.TritonModelException) as e:
        pb_utils.Tensor.from_dlpack("T", 5)
    assert str(e.value) == (
        "Provided tensor is not supported. Tensor must be a DLPack capsule         or have "
        "`__dlpack__` and `__dlpack_device__` attributes"
    )
    with pytest.raises(pb_utils.TritonModelException) as e:
        pb_utils.Tensor.from_dlpack("", np.arange(2))
    assert str(e.value) == "Tensor name cannot be an empty string."

    class OnGpu:
        def __dlpack__(self, stream=None):
            raise AssertionError("not reached")

        def __dlpack_device__(self):
            return (2, 0)

    with pytest.raises(pb_utils.TritonModelException, match="GPU is not available"):
        pb_utils.Tensor.from_dlpack("T", OnGpu())


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


# --- without a runtime ----------------------------------------------------------------------


def test_calls_needing_the_server_fail_clearly_without_runtime():
    request = server_request()
    bls = pb_utils.InferenceRequest(model_name="m", inputs=[], requested_output_names=["a"])
    for call in (
        bls.exec,
        request.is_cancelled,
        lambda: request.get_response_sender().send(response("OUT")),
        pb_utils.get_model_dir,
    ):
        with pytest.raises(pb_utils.TritonModelException, match="not connected to a server|"
                           "only known inside a model instance"):
            call()
    with pytest.raises(pb_utils.TritonModelException, match="^Failed to load model: "):
        pb_utils.load_model("m")
    with pytest.raises(pb_utils.TritonModelException, match="^Error when creating MetricFamily: "):
        pb_utils.MetricFamily("f", "d", pb_utils.MetricFamily.COUNTER)
    # A failed send did not consume the sender.
    assert not request.get_response_sender()._is_closed()


def test_logger_falls_back_to_logging(caplog):
    with caplog.at_level(logging.DEBUG, logger="triton_python_backend_utils"):
        pb_utils.Logger.log_warn("careful")
        pb_utils.Logger.log_verbose("details")
    warning, verbose = caplog.records
    assert warning.levelno == logging.WARNING and verbose.levelno == logging.DEBUG
    assert warning.getMessage().startswith(__file__ + ":")
    assert warning.getMessage().endswith("] careful")


# --- with a (fake) runtime ------------------------------------------------------------------


def test_response_sender_decoupled(rt):
    request = server_request(decoupled=True, names=("OUT",))
    sender = request.get_response_sender()
    first = response("OUT", "NOT_REQUESTED")
    sender.send(first)
    sender.send(response("OUT"))
    sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    assert [(c[1], c[3]) for c in rt.calls] == [("h1", 0), ("h1", 0), ("h1", 1)]
    assert [t.name() for t in first.output_tensors()] == ["OUT"]  # pruned to the request
    assert rt.calls[2][2] is None
    assert sender._is_closed()
    with pytest.raises(pb_utils.TritonModelException) as e:
        sender.send(response("OUT"))
    assert str(e.value) == "Unable to send response. Response sender has been closed."


def test_response_sender_argument_errors(rt):
    sender = server_request(decoupled=True).get_response_sender()
    with pytest.raises(pb_utils.TritonModelException) as e:
        sender.send(response("OUT"), flags=4)
    assert str(e.value) == "Unable to send response. Unsupported flag provided."
    with pytest.raises(pb_utils.TritonModelException) as e:
        sender.send()
    assert str(e.value) == (
        "Inference Response object must be provided when the response flags is set to zero."
    )
    with pytest.raises(TypeError):
        sender.send("not a response")
    assert rt.calls == []


def test_response_sender_non_decoupled(rt):
    sender = server_request(decoupled=False).get_response_sender()
    with pytest.raises(pb_utils.TritonModelException) as e:
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    assert str(e.value) == (
        "Unable to send response. Non-decoupled model cannot send complete final before "
        "sending a response."
    )
    sender.send(response("OUT"))
    with pytest.raises(pb_utils.TritonModelException) as e:
        sender.send(response("OUT"))
    assert str(e.value) == (
        "Unable to send response. Non-decoupled model cannot send more than one response."
    )
    sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    assert [c[3] for c in rt.calls] == [0, 1]


def test_stub_hooks_for_returned_responses(rt):
    request = server_request(decoupled=False)
    sender = request.get_response_sender()
    returned = response("OUT", "EXTRA")
    sender._update_state(returned, pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    returned._prune_output_tensors(request.requested_output_names())
    assert sender._is_closed()
    assert [t.name() for t in returned.output_tensors()] == ["OUT"]
    other = server_request(decoupled=True).get_response_sender()
    other._close()
    with pytest.raises(pb_utils.TritonModelException, match="has been closed"):
        other.send(response("OUT"))
    assert rt.calls == []


def test_cancellation(rt):
    request = server_request()
    assert request.is_cancelled() is False
    rt.cancelled = True
    assert request.get_response_sender().is_cancelled() is True
    assert rt.calls == [("is_cancelled", "h1"), ("is_cancelled", "h1")]


def test_bls_exec(rt):
    request = pb_utils.InferenceRequest(
        model_name="other", inputs=[], requested_output_names=["OUT"], model_version=3
    )
    reply = request.exec()
    assert reply is rt.bls_response
    assert pb_utils.get_output_tensor_by_name(reply, "OUT").as_numpy()[0] == 1.0
    assert list(request.exec(decoupled=True)) == [rt.bls_response]
    assert [(c[0], c[1], c[2]) for c in rt.calls] == [
        ("bls_exec", request, False),
        ("bls_exec", request, True),
    ]


def test_bls_async_exec(rt):
    request = pb_utils.InferenceRequest(model_name="o", inputs=[], requested_output_names=["OUT"])

    async def execute():
        return await asyncio.gather(request.async_exec(), request.async_exec(decoupled=True))

    single, stream = asyncio.run(execute())
    assert single is rt.bls_response
    assert list(stream) == [rt.bls_response]
    with pytest.raises(RuntimeError, match="no running event loop"):
        request.async_exec()


def test_logger_with_runtime(rt):
    pb_utils.Logger.log("hello")
    pb_utils.Logger.log("bad", pb_utils.Logger.ERROR)
    pb_utils.Logger.log_info("i")
    pb_utils.Logger.log_verbose("v")
    levels = [c[1] for c in rt.calls]
    assert levels == [0, 2, 0, 3]
    assert pb_utils.Logger.LogLevel.WARNING == pb_utils.Logger.WARNING == 1
    _, _, message, filename, line = rt.calls[0]
    assert message == "hello" and filename == __file__ and line > 0


def test_metrics(rt):
    family = pb_utils.MetricFamily("latency", "help text", pb_utils.MetricFamily.COUNTER)
    metric = family.Metric(labels={"model": "m"})
    metric.increment(2)
    metric.increment(3)
    assert metric.value() == 5.0
    gauges = pb_utils.MetricFamily("g", "d", pb_utils.MetricFamily.GAUGE)
    gauge = gauges.Metric()
    gauge.set(7)
    assert gauge.value() == 7.0
    histogram = pb_utils.MetricFamily("h", "d", pb_utils.MetricFamily.HISTOGRAM)
    observed = histogram.Metric(labels={}, buckets=[1, 2.5])
    observed.observe(1.5)
    assert ("metric_family_new", "latency", "help text", 0) in rt.calls
    assert ("metric_new", "family:h", {}, [1.0, 2.5]) in rt.calls
    assert ("metric_update", observed._handle, "observe", 1.5) in rt.calls
    assert ("metric_new", "family:g", {}, None) in rt.calls


def test_metric_errors(rt):
    counter = pb_utils.MetricFamily("c", "d", pb_utils.MetricFamily.COUNTER)
    histogram = pb_utils.MetricFamily("h", "d", pb_utils.MetricFamily.HISTOGRAM)
    cases = [
        (lambda: counter.Metric(labels=[1]), "Labels must be a dictionary."),
        (lambda: histogram.Metric(buckets=(1,)), "Buckets must be a list."),
        (lambda: counter.Metric(buckets=[1.0]), "Unexpected buckets found."),
        (lambda: histogram.Metric(), "Missing required buckets."),
    ]
    for call, reason in cases:
        with pytest.raises(pb_utils.TritonModelException) as e:
            call()
        assert str(e.value) == "Failed to create metric. " + reason
    with pytest.raises(TypeError):
        pb_utils.MetricFamily("x", "d", 0)  # Triton wants a MetricFamily kind
    metric = counter.Metric()
    rt.fail_with = "negative increment"
    with pytest.raises(pb_utils.TritonModelException) as e:
        metric.increment(-1)
    assert str(e.value) == "Failed to increment metric value: negative increment"
    rt.fail_with = None


def test_deleting_a_family_deletes_its_metrics(rt):
    family = pb_utils.MetricFamily("f", "d", pb_utils.MetricFamily.GAUGE)
    metric = family.Metric(labels={"a": "b"})
    del family
    gc.collect()
    assert rt.calls[-2:] == [("metric_delete", metric._handle), ("metric_family_delete", "family:f")]
    with pytest.raises(pb_utils.TritonModelException) as e:
        metric.value()
    assert str(e.value) == (
        "Failed to get metric value: Invalid metric operation as the corresponding "
        "'MetricFamily' has been deleted. The 'MetricFamily' object should be deleted AFTER "
        "its corresponding 'Metric' objects have been deleted."
    )


def test_model_loading(rt):
    pb_utils.load_model("a")
    pb_utils.load_model("b", config='{"backend":"python"}', files={"file:1/model.py": b"x"})
    pb_utils.unload_model("a", unload_dependents=True)
    assert pb_utils.is_model_ready("a", "1") is True
    assert rt.calls == [
        ("load_model", "a", "", {}),
        ("load_model", "b", '{"backend":"python"}', {"file:1/model.py": b"x"}),
        ("unload_model", "a", True),
        ("is_model_ready", "a", "1"),
    ]
    rt.fail_with = "explicit model load / unload is not allowed if polling is enabled"
    for call, prefix in (
        (lambda: pb_utils.load_model("a"), "Failed to load model: "),
        (lambda: pb_utils.unload_model("a"), "Failed to unload model: "),
        (lambda: pb_utils.is_model_ready("a"), "Failed to check model readiness: "),
    ):
        with pytest.raises(pb_utils.TritonModelException) as e:
            call()
        assert str(e.value) == prefix + rt.fail_with


def test_get_model_dir(rt):
    assert pb_utils.get_model_dir() == "/models/m/1"
