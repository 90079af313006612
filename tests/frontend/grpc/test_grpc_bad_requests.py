"""Bad gRPC requests: each gets Triton's status code and message, and the server keeps serving.
"""

from __future__ import annotations

import struct
from typing import Any

import grpc
import hpack
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from support.grpc_fixtures import (
    F4,
    I16,
    assert_still_serving,
    bytes_wire,
    channel,  # noqa: F401
    client,  # noqa: F401
    infer_request,
    stub,  # noqa: F401
    tensor,
)
from support.h2_frames import (
    DATA,
    END_HEADERS,
    END_STREAM,
    HEADERS,
    RawClient,
    frame,
    request_headers,
)

# -- bad requests: Triton's status code and message; the server keeps serving ------------------

SERVICE = "/inference.GRPCInferenceService/"
NOT_FOUND = grpc.StatusCode.NOT_FOUND
INVALID = grpc.StatusCode.INVALID_ARGUMENT


def _f4_input(datatype: str = "FP32", shape: list[int] = (1, 4)):
    return tensor("INPUT0", datatype, list(shape))


def _with_uint64(request: Any, key: str) -> Any:
    request.parameters[key].uint64_param = 2**63 + 5
    return request


BAD_REQUESTS = {
    "unknown model": (
        infer_request("no_such_model", [_f4_input()], [F4.tobytes()]),
        NOT_FOUND, "Request for unknown model: 'no_such_model' is not found",
    ),
    "unknown model wins over bad data": (
        infer_request("no_such_model", [_f4_input("FOO")], [b"123"]),
        NOT_FOUND, "Request for unknown model: 'no_such_model' is not found",
    ),
    "unknown version": (
        infer_request("identity_fp32", [_f4_input()], [F4.tobytes()], version="7"),
        NOT_FOUND, "Request for unknown model: 'identity_fp32' version 7 is not found",
    ),
    "version not a number": (
        infer_request("identity_fp32", [_f4_input()], [F4.tobytes()], version="abc"),
        INVALID, "failed to get model version from specified version string 'abc'",
    ),
    "negative version": (
        infer_request("identity_fp32", [_f4_input()], [F4.tobytes()], version="-1"),
        INVALID, "invalid model version specified '-1'",
    ),
    "missing input": (
        infer_request("identity_int32", [tensor("INPUT0", "INT32", [1, 16])], [I16.tobytes()]),
        INVALID, "missing required input(s) ['INPUT1']",
    ),
    "wrong datatype": (
        infer_request("identity_fp32", [_f4_input("INT32")], [F4.tobytes()]),
        INVALID, "inference input 'INPUT0' data-type is 'INT32', but model 'identity_fp32' "
                 "expects 'FP32'",
    ),
    "wrong shape": (
        infer_request("identity_int32",
                      [tensor("INPUT0", "INT32", [1, 8]), tensor("INPUT1", "INT32", [1, 8])],
                      [I16.tobytes()[:32], I16.tobytes()[:32]]),
        INVALID, "unexpected shape for input",
    ),
    "raw size does not match the shape": (
        infer_request("identity_fp32", [_f4_input()], [F4.tobytes()[:12]]),
        INVALID, "input byte size mismatch for input 'INPUT0' for model 'identity_fp32'. "
                 "Expected 16, got 12",
    ),
    "fewer raw contents than inputs": (
        infer_request("identity_int32",
                      [tensor("INPUT0", "INT32", [1, 16]), tensor("INPUT1", "INT32", [1, 16])],
                      [I16.tobytes()]),
        INVALID, "unable to find data for input tensor 'INPUT1' for model 'identity_int32' "
                 "in request.",
    ),
    "more raw contents than inputs": (
        infer_request("identity_fp32", [_f4_input()], [F4.tobytes(), F4.tobytes()]),
        INVALID, "raw_input_contents must hold one entry per input",
    ),
    "no data at all": (
        infer_request("identity_fp32", [_f4_input()]),
        INVALID, "unable to find data for input tensor 'INPUT0' for model 'identity_fp32'",
    ),
    "contents and raw contents": (
        infer_request("identity_fp32",
                      [tensor("INPUT0", "FP32", [1, 4], fp32_contents=[1, 2, 3, 4])],
                      [F4.tobytes()]),
        INVALID, "contents field must not be specified when using raw_input_contents for "
                 "'INPUT0' for model 'identity_fp32'",
    ),
    "unknown datatype": (
        infer_request("identity_fp32", [_f4_input("FOO")], [F4.tobytes()]),
        INVALID, "invalid datatype 'FOO' for input 'INPUT0'",
    ),
    "FP16 typed contents are not possible": (
        infer_request("identity_fp32",
                      [tensor("INPUT0", "FP16", [1, 2], fp32_contents=[1, 2])]),
        INVALID, "of type 'FP32', expected datatype 'FP16'",
    ),
    "contents element count": (
        infer_request("identity_fp32",
                      [tensor("INPUT0", "FP32", [1, 4], fp32_contents=[1, 2, 3])]),
        INVALID, "input byte size mismatch for input 'INPUT0' for model 'identity_fp32'. "
                 "Expected 16, got 12",
    ),
    "contents of the wrong type": (
        infer_request("identity_fp32",
                      [tensor("INPUT0", "FP32", [1, 4], int_contents=[1, 2, 3, 4])]),
        INVALID, "unexpected explicit tensor data for input tensor 'INPUT0' for model "
                 "'identity_fp32' of type 'INT32', expected datatype 'FP32'",
    ),
    "BYTES contents element count": (
        infer_request("identity_bytes",
                      [tensor("INPUT0", "BYTES", [1, 3], bytes_contents=[b"a", b"b"])]),
        INVALID, "expected 3 string elements for inference input 'INPUT0' for model "
                 "'identity_bytes', got 2",
    ),
    "BYTES length prefix beyond the data": (
        infer_request("identity_bytes", [tensor("INPUT0", "BYTES", [1, 1])],
                      [struct.pack("<I", 5) + b"ab"]),
        INVALID, "incomplete string data for inference input 'INPUT0', expecting string of "
                 "length 5 but only 2 bytes available",
    ),
    "BYTES length prefix beyond the data, elements short": (
        # Triton's core counts the truncated element, then finds too few.
        infer_request("identity_bytes", [tensor("INPUT0", "BYTES", [1, 2])],
                      [struct.pack("<I", 5) + b"ab"]),
        INVALID, "expected 2 string elements for inference input 'INPUT0' for model "
                 "'identity_bytes', got 1",
    ),
    "BYTES fewer elements than the shape": (
        infer_request("identity_bytes", [tensor("INPUT0", "BYTES", [1, 2])], [bytes_wire(b"ab")]),
        INVALID, "expected 2 string elements for inference input 'INPUT0' for model "
                 "'identity_bytes', got 1",
    ),
    "BYTES more elements than the shape": (
        infer_request("identity_bytes", [tensor("INPUT0", "BYTES", [1, 1])],
                      [bytes_wire(b"ab", b"c")]),
        INVALID, "unexpected number of string elements 2 for inference input 'INPUT0' for "
                 "model 'identity_bytes', expecting 1",
    ),
    "BYTES trailing partial length": (
        infer_request("identity_bytes", [tensor("INPUT0", "BYTES", [1, 1])],
                      [bytes_wire(b"ab") + b"\x01\x00"]),
        INVALID, "incomplete string length indicator for inference input 'INPUT0' for model "
                 "'identity_bytes', expecting 4 bytes but only 2 bytes available",
    ),
    "negative dimension": (
        infer_request("identity_fp32", [_f4_input(shape=[1, -4])], [F4.tobytes()]),
        INVALID, "invalid shape [1,-4] for input 'INPUT0' of model 'identity_fp32'",
    ),
    "huge dimension": (
        infer_request("identity_fp32", [_f4_input(shape=[1, 2**40])], [F4.tobytes()]),
        INVALID, "Expected 4398046511104, got 16",
    ),
    "huge BYTES dimension": (
        infer_request("identity_bytes", [tensor("INPUT0", "BYTES", [2**31, 2**31])],
                      [bytes_wire(b"a")]),
        INVALID, "expected 4611686018427387904 string elements",
    ),
    "dimensions whose product overflows int64": (
        infer_request("identity_fp32", [_f4_input(shape=[2**62, 2**62])], [F4.tobytes()]),
        INVALID, "input byte size mismatch",
    ),
    "duplicate input": (
        infer_request("identity_fp32", [_f4_input(), _f4_input()], [F4.tobytes()] * 2),
        INVALID, "input 'INPUT0' already exists in request",
    ),
    "unknown output": (
        infer_request("identity_fp32", [_f4_input()], [F4.tobytes()], outputs=["NOPE"]),
        INVALID, "unexpected inference output 'NOPE' for model 'identity_fp32'",
    ),
    "sequence_id of the wrong type": (
        infer_request("identity_fp32", [_f4_input()], [F4.tobytes()],
                      params={"sequence_id": True}),
        INVALID, "invalid value type for 'sequence_id' parameter, expected int64_param or "
                 "string_param.",
    ),
    "negative priority": (
        infer_request("identity_fp32", [_f4_input()], [F4.tobytes()], params={"priority": -1}),
        INVALID, "invalid value for 'priority', expected value >= 0.",
    ),
    "reserved parameter name": (
        infer_request("identity_fp32", [_f4_input()], [F4.tobytes()], params={"triton_x": 1}),
        INVALID, "parameter keys starting with 'triton_' are reserved for Triton usage.",
    ),
    # Triton 2.51 takes double_param (its message does not list it) but not uint64_param.
    "uint64 parameter": (
        _with_uint64(infer_request("identity_fp32", [_f4_input()], [F4.tobytes()]), "x"),
        INVALID, "invalid value type for 'x' parameter, expected int64_param, bool_param, or "
                 "string_param.",
    ),
}


@pytest.mark.parametrize("case", list(BAD_REQUESTS))
def test_bad_request(stub, case):
    request, code, message = BAD_REQUESTS[case]
    with pytest.raises(grpc.RpcError) as info:
        stub.ModelInfer(request)
    assert info.value.code() == code, info.value.details()
    assert message in info.value.details()
    assert_still_serving(stub)


# Triton 2.51 lists every input in this message: for 100,000 inputs 1.2 MB of trailing
# metadata, which gRPC clients refuse (RESOURCE_EXHAUSTED "received metadata size exceeds hard
# limit") instead of reading the INVALID_ARGUMENT. The list names 16 and counts the rest.
MANY_INPUTS = ("[request id: <id_unknown>] expected 1 inputs but got 100000 inputs for model "
               "'identity_fp32'. Got input(s) ['INPUT0'," + ",".join(
                   f"'EXTRA{i}'" for i in range(15)) + "] and 99984 more, but missing required "
               "input(s) ]. Please provide all required input(s).")


def test_a_request_of_100000_inputs_is_told_what_is_wrong(stub):
    names = ["INPUT0", *(f"EXTRA{i}" for i in range(99_999))]
    request = infer_request("identity_fp32", [tensor(name, "FP32", [1, 1]) for name in names],
                            [F4.tobytes()[:4]] * len(names))
    with pytest.raises(grpc.RpcError) as info:
        stub.ModelInfer(request)
    assert (info.value.code(), info.value.details()) == (INVALID, MANY_INPUTS)
    assert_still_serving(stub)


def test_a_long_message_is_cut_to_what_clients_read(stub):
    """A status message past 4096 bytes (here naming a 100 KB input) is cut with "...": the
    client reads INVALID_ARGUMENT where a whole message made it see RESOURCE_EXHAUSTED."""
    name = "N" * 100_000
    request = infer_request("identity_fp32", [tensor(name, "FP32", [1, 4])], [F4.tobytes()])
    with pytest.raises(grpc.RpcError) as info:
        stub.ModelInfer(request)
    details = info.value.details()
    assert info.value.code() == INVALID
    assert details.startswith("unexpected inference input 'NNNN") and details.endswith("N...")
    assert len(details) == 4096
    assert_still_serving(stub)


def test_unregistered_shared_memory_region(stub):
    request = infer_request("identity_fp32", [_f4_input()])
    request.inputs[0].parameters["shared_memory_region"].string_param = "region0"
    request.inputs[0].parameters["shared_memory_byte_size"].int64_param = 16
    with pytest.raises(grpc.RpcError) as info:
        stub.ModelInfer(request)
    assert info.value.code() == NOT_FOUND
    assert info.value.details() == "Unable to find shared memory region: 'region0'"
    assert_still_serving(stub)


@pytest.mark.parametrize("payload", [b"\xff" * 10, b"\x0a\x05ab",
                                     b"\x3a\xff\xff\xff\xff\x0f" + b"x" * 60_000])
def test_message_that_does_not_parse(channel, stub, payload):
    call = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer",
                               request_serializer=lambda b: b, response_deserializer=lambda b: b)
    with pytest.raises(grpc.RpcError) as info:
        call(payload)
    assert info.value.code() == grpc.StatusCode.INTERNAL
    assert info.value.details() == "Unable to parse request"
    assert_still_serving(stub)


def _raw_call(server, headers: list[tuple[str, str]], body: bytes | None) -> dict[str, str]:
    """The status fields answering one call sent as raw HTTP/2 frames (`body` None: the
    headers end the stream)."""
    attacker = RawClient(server.grpc_url)
    try:
        block = hpack.Encoder().encode(headers)
        if body is None:
            attacker.send(frame(HEADERS, END_HEADERS | END_STREAM, 1, block))
        else:
            attacker.send(frame(HEADERS, END_HEADERS, 1, block) + frame(DATA, END_STREAM, 1, body))
        return attacker.answer(1)
    finally:
        attacker.close()


# What a client sends when its request stream ends early (a proxy cutting it, a client crashing
# mid-write): no message at all, or a length prefix promising more bytes than came.
@pytest.mark.parametrize("body", [None, struct.pack(">BI", 0, 9) + b"\x0a"])
def test_a_unary_request_without_a_whole_message_does_not_parse(server, stub, body):
    fields = _raw_call(server, request_headers(SERVICE + "ModelInfer"), body)
    assert fields["grpc-status"] == str(grpc.StatusCode.INTERNAL.value[0])
    assert fields["grpc-message"] == "Unable to parse request"
    assert_still_serving(stub)


def _without_te(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(name, value) for name, value in headers if name != "te"]


# Clients that are not gRPC stacks (curl, hand-written HTTP/2): grpc core refuses a method other
# than POST, then a missing or other `te`, each with UNKNOWN, before it looks up the method.
@pytest.mark.parametrize("headers,message", [
    ([(":method", "PUT"), *request_headers(SERVICE + "ServerLive")[1:]], "Bad method header"),
    (_without_te([(":method", "GET"), *request_headers(SERVICE + "Nope")[1:]]),
     "Bad method header"),
    (_without_te(request_headers(SERVICE + "ServerLive")), "Missing :te header"),
    (_without_te(request_headers(SERVICE + "Nope")), "Missing :te header"),
    (_without_te(request_headers(SERVICE + "ServerLive")) + [("te", "gzip")],
     "Missing :te header"),
])
def test_calls_grpc_core_refuses_before_the_method(server, stub, headers, message):
    fields = _raw_call(server, headers, struct.pack(">BI", 0, 0))
    assert fields["grpc-status"] == str(grpc.StatusCode.UNKNOWN.value[0])
    assert fields["grpc-message"] == message
    assert_still_serving(stub)


def test_an_unknown_method_is_answered_without_a_message(server):
    fields = _raw_call(server, request_headers(SERVICE + "Nope"), struct.pack(">BI", 0, 0))
    assert fields["grpc-status"] == str(grpc.StatusCode.UNIMPLEMENTED.value[0])
    assert "grpc-message" not in fields


def test_tritonclient_sees_status_and_message(client):
    inp = grpcclient.InferInput("INPUT0", [1, 4], "FP32")
    inp.set_data_from_numpy(F4)
    with pytest.raises(InferenceServerException) as info:
        client.infer("no_such_model", [inp])
    assert info.value.status() == "StatusCode.NOT_FOUND"
    assert info.value.message() == "Request for unknown model: 'no_such_model' is not found"
    wrong = grpcclient.InferInput("INPUT0", [1, 4], "INT32")
    wrong.set_data_from_numpy(F4.astype(np.int32))
    with pytest.raises(InferenceServerException) as info:
        client.infer("identity_fp32", [wrong], request_id="r1")
    assert info.value.status() == "StatusCode.INVALID_ARGUMENT"
    assert info.value.message().startswith("[request id: r1] inference input 'INPUT0' data-type")
