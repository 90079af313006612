"""Malformed HTTP/REST requests: each gets Triton's status and a message naming the problem.

The expected texts are what Triton 2.51 answers for the same requests (compared with the reference
server); where Triton answers a malformed body with 500 we answer 400. After each, the shared
server must still serve.
"""

from __future__ import annotations

import json
import socket
import struct

import numpy as np
import pytest

from support.http_infer_requests import (
    BYTES,
    FP32,
    INT32,
    assert_still_serving,
    binary_input,
    bytes_elements,
    f32_input,
)
from support.raw_http import post

# -- malformed requests: a clean error naming the problem, and the server keeps serving -----

_F = np.arange(6, dtype=np.float32).tobytes()
_HEADER = json.dumps({"inputs": [binary_input("INPUT0", "FP32", [2, 3], 24)]}).encode()

BAD_REQUESTS = [
    # (id, path, kwargs for post(), status, text the error must contain)
    ("malformed-json", FP32, {"raw": b'{"inputs": ['}, 400,
     "failed to parse the request JSON buffer: Invalid value. at 12"),
    ("json-array", FP32, {"raw": b"[1, 2]"}, 400,
     "Unable to parse 'inputs': attempt to access non-existing object member 'inputs'"),
    ("trailing-garbage", FP32,
     {"raw": json.dumps({"inputs": [f32_input([1, 2, 3])]}).encode() + b"xyz"}, 400,
     "The document root must not be followed by other values"),
    ("deep-nesting", FP32, {"raw": b"[" * 100000 + b"]" * 100000}, 400,
     "failed to parse the request JSON buffer"),
    ("no-inputs", FP32, {"document": {}}, 400,
     "Unable to parse 'inputs': attempt to access non-existing object member 'inputs'"),
    ("inputs-not-array", FP32, {"document": {"inputs": {}}}, 400,
     "Unable to parse 'inputs': attempt to access JSON non-array as array"),
    ("input-not-object", FP32, {"document": {"inputs": [5]}}, 400,
     "Input must set only one of the following fields"),
    ("no-name", FP32, {"document": {"inputs": [
        {"datatype": "FP32", "shape": [1, 1], "data": [1]}]}}, 400,
     "Unable to parse 'name': attempt to access non-existing object member 'name'"),
    ("name-not-string", FP32, {"document": {"inputs": [
        {"name": 1, "datatype": "FP32", "shape": [1, 1], "data": [1]}]}}, 400,
     "Unable to parse 'name': attempt to access JSON non-string as string"),
    ("no-datatype", FP32, {"document": {"inputs": [
        {"name": "INPUT0", "shape": [1, 1], "data": [1]}]}}, 400,
     "Unable to parse 'datatype': attempt to access non-existing object member 'datatype'"),
    ("no-shape", FP32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "FP32", "data": [1]}]}}, 400,
     "Unable to parse 'shape': attempt to access non-existing object member 'shape'"),
    ("no-data", FP32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [1, 1]}]}}, 400,
     "Input must set only one of the following fields: 'data', 'binary_data_size' in "
     "'parameters', 'shared_memory_region' in 'parameters'. But no field is set"),
    ("data-and-binary", FP32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [1, 1], "data": [1],
         "parameters": {"binary_data_size": 4}}]}}, 400, "But set 'data' 'binary_data_size'"),
    ("shape-more-than-data", FP32, {"document": {"inputs": [f32_input([1, 2, 3], [1, 4])]}}, 400,
     "Unable to parse 'data': Shape does not match true shape of 'data' field"),
    ("shape-less-than-data", FP32, {"document": {"inputs": [f32_input([1, 2, 3], [1, 2])]}}, 400,
     "Unable to parse 'data': Shape does not match true shape of 'data' field"),
    ("unknown-datatype", FP32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "FP33", "shape": [1, 1], "data": [1]}]}}, 400,
     "invalid datatype for input INPUT0"),
    ("unknown-datatype-binary", FP32, {"document": {"inputs": [
        binary_input("INPUT0", "FP33", [1, 1], 4)]}, "binary": b"\x00" * 4}, 400,
     "inference input 'INPUT0' data-type is '<invalid>', but model 'identity_fp32' expects "
     "'FP32'"),
    ("wrong-datatype", FP32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 1], "data": [1]}]}}, 400,
     "[request id: <id_unknown>] inference input 'INPUT0' data-type is 'INT32', but model "
     "'identity_fp32' expects 'FP32'"),
    ("strings-for-fp32", FP32, {"document": {"inputs": [f32_input(["a", "b", "c"])]}}, 400,
     "Unable to parse 'data': attempt to access JSON non-number as double"),
    ("bool-for-fp32", FP32, {"document": {"inputs": [f32_input([True, 2, 3])]}}, 400,
     "Unable to parse 'data': attempt to access JSON non-number as double"),
    ("null-for-fp32", FP32, {"document": {"inputs": [f32_input([1, None, 3])]}}, 400,
     "Unable to parse 'data': attempt to access JSON non-number as double"),
    ("float-for-int32", INT32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": [0.5] * 16},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16}]}}, 400,
     "Unable to parse 'data': attempt to access JSON non-signed-integer as signed-integer"),
    ("number-for-bytes", BYTES, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "BYTES", "shape": [1, 2], "data": [1, 2]}]}}, 400,
     "Unable to parse JSON bytes array: attempt to access JSON non-string as string"),
    ("data-not-array", FP32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [1, 1], "data": 5}]}}, 400,
     "Unable to parse 'data': attempt to access JSON non-array as array"),
    ("fp16-as-json", FP32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "FP16", "shape": [1, 1], "data": [1]}]}}, 400,
     "receiving FP16 data via JSON is not supported. Please use the binary data format for "
     "input INPUT0"),
    ("negative-dim", FP32, {"document": {"inputs": [f32_input([1, 2, 3], [1, -3])]}}, 400,
     "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer"),
    ("float-dim", FP32, {"document": {"inputs": [f32_input([1, 2, 3], [1, 3.0])]}}, 400,
     "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer"),
    ("shape-not-array", FP32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": 3, "data": [1, 2, 3]}]}}, 400,
     "Unable to parse 'shape': attempt to access JSON non-array as array"),
    ("huge-shape-json", FP32, {"document": {"inputs": [f32_input([1, 2, 3], [1, 1 << 40])]}},
     400, "Unable to parse 'data': Shape does not match true shape of 'data' field"),
    ("huge-shape-binary", FP32, {"document": {"inputs": [
        binary_input("INPUT0", "FP32", [1, 1 << 40], 12)]}, "binary": _F[:12]}, 400,
     "input byte size mismatch for input 'INPUT0' for model 'identity_fp32'. "
     "Expected 4398046511104, got 12"),
    ("body-shorter-than-binary-size", FP32, {"document": {"inputs": [
        binary_input("INPUT0", "FP32", [2, 3], 24)]}, "binary": _F[:20]}, 400,
     "unexpected size for input 'INPUT0', expecting 4 additional bytes for model "
     "'identity_fp32'"),
    ("binary-size-not-matching-shape", FP32, {"document": {"inputs": [
        binary_input("INPUT0", "FP32", [2, 3], 20)]}, "binary": _F[:20]}, 400,
     "[request id: <id_unknown>] input byte size mismatch for input 'INPUT0' for model "
     "'identity_fp32'. Expected 24, got 20"),
    ("extra-binary-data", FP32, {"document": {"inputs": [
        binary_input("INPUT0", "FP32", [2, 3], 24)]}, "binary": _F + b"xxxx"}, 400,
     "unexpected additional input data for model 'identity_fp32'"),
    ("negative-binary-size", FP32, {"document": {"inputs": [
        binary_input("INPUT0", "FP32", [2, 3], -24)]}, "binary": _F}, 400,
     "Unable to parse 'binary_data_size': attempt to access JSON non-unsigned-integer as "
     "unsigned-integer"),
    ("header-length-beyond-body", FP32, {
        "raw": _HEADER + _F,
        "headers": {"Inference-Header-Content-Length": str(len(_HEADER) + 1000)}}, 400,
     f"inference header size should be in range (0, {len(_HEADER) + 24}), got: "
     f"{len(_HEADER) + 1000}"),
    ("negative-header-length", FP32, {
        "raw": _HEADER + _F, "headers": {"Inference-Header-Content-Length": "-5"}}, 400,
     "inference header size should be in range"),
    ("header-length-cuts-json", FP32, {
        "raw": _HEADER + _F,
        "headers": {"Inference-Header-Content-Length": str(len(_HEADER) - 3)}}, 400,
     "failed to parse the request JSON buffer"),
    ("bytes-count-short", BYTES, {"document": {"inputs": [
        binary_input("INPUT0", "BYTES", [1, 3], 12)]}, "binary": bytes_elements(b"ab", b"cd")},
     400, "expected 3 string elements for inference input 'INPUT0' for model 'identity_bytes', "
     "got 2"),
    ("bytes-count-long", BYTES, {"document": {"inputs": [
        binary_input("INPUT0", "BYTES", [1, 1], 12)]}, "binary": bytes_elements(b"ab", b"cd")},
     400, "unexpected number of string elements 2 for inference input 'INPUT0' for model "
     "'identity_bytes', expecting 1"),
    ("bytes-truncated-element", BYTES, {"document": {"inputs": [
        binary_input("INPUT0", "BYTES", [1, 1], 9)]}, "binary": struct.pack("<I", 30) + b"abcde"},
     400, "incomplete string data for inference input 'INPUT0', expecting string of length 30 "
     "but only 5 bytes available"),
    ("bytes-truncated-length", BYTES, {"document": {"inputs": [
        binary_input("INPUT0", "BYTES", [1, 1], 7)]}, "binary": bytes_elements(b"a") + b"\x01\x02"},
     400, "incomplete string length indicator for inference input 'INPUT0'"),
    ("bytes-json-count", BYTES, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "BYTES", "shape": [1, 3], "data": ["a", "b"]}]}}, 400,
     "expected 3 string elements for inference input 'INPUT0' for model 'identity_bytes', got 2"),
    ("duplicate-input", FP32, {"document": {"inputs": [f32_input([1]), f32_input([1])]}}, 400,
     "[request id: <id_unknown>] input 'INPUT0' already exists in request"),
    ("missing-input", INT32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16}]}}, 400,
     "expected 2 inputs but got 1 inputs for model 'identity_int32'"),
    ("unknown-input", FP32, {"document": {"inputs": [f32_input([1], name="INPUTX")]}}, 400,
     "unexpected inference input 'INPUTX'"),
    ("wrong-dims", INT32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 15], "data": [1] * 15},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16}]}}, 400,
     "unexpected shape for input 'INPUT0' for model 'identity_int32'. Expected [-1,16], "
     "got [1,15]"),
    ("batch-too-big", FP32, {"document": {"inputs": [f32_input([1] * 9, [9, 1])]}}, 400,
     "inference request batch-size must be <= 8 for 'identity_fp32'"),
    ("unknown-output", FP32, {"document": {"inputs": [f32_input([1])],
                                           "outputs": [{"name": "NOPE"}]}}, 400,
     "unexpected inference output 'NOPE' for model 'identity_fp32'"),
    # Triton checks the requested outputs before the inputs (L0_output_name).
    ("unknown-output-and-input", FP32, {"document": {
        "inputs": [f32_input([1], name="INPUTX")], "outputs": [{"name": "NOPE"}]}}, 400,
     "unexpected inference output 'NOPE' for model 'identity_fp32'"),
    ("outputs-not-array", FP32, {"document": {"inputs": [f32_input([1])], "outputs": {}}}, 400,
     "Unable to parse 'outputs': attempt to access JSON non-array as array"),
    ("output-binary-not-bool", FP32, {"document": {
        "inputs": [f32_input([1])],
        "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": "yes"}}]}}, 400,
     "Unable to parse 'binary_data': attempt to access JSON non-boolean as boolean"),
    ("classification-negative", FP32, {"document": {
        "inputs": [f32_input([1])],
        "outputs": [{"name": "OUTPUT0", "parameters": {"classification": -1}}]}}, 400,
     "Unable to set 'classification'"),
    ("classification-of-bytes", BYTES, {"document": {
        "inputs": [{"name": "INPUT0", "datatype": "BYTES", "shape": [1, 1], "data": ["a"]}],
        "outputs": [{"name": "OUTPUT0", "parameters": {"classification": 1}}]}}, 400,
     "class result not available for output 'OUTPUT0' due to unsupported type 'BYTES'"),
    ("id-not-string", FP32, {"document": {"id": 5, "inputs": [f32_input([1])]}}, 400,
     "Unable to parse 'id': attempt to access JSON non-string as string"),
    ("parameters-not-object", FP32, {"document": {"parameters": [1], "inputs": [f32_input([1])]}},
     400, "failed to get request params.: attempt to get members for non-object"),
    ("binary-data-output-not-bool", FP32, {"document": {
        "parameters": {"binary_data_output": 1}, "inputs": [f32_input([1])]}}, 400,
     "Unable to parse 'binary_data_output': attempt to access JSON non-boolean as boolean"),
    ("sequence-start-not-bool", FP32, {"document": {
        "parameters": {"sequence_start": 1}, "inputs": [f32_input([1])]}}, 400,
     "Unable to parse 'sequence_start': attempt to access JSON non-boolean as boolean"),
    ("negative-priority", FP32, {"document": {
        "parameters": {"priority": -1}, "inputs": [f32_input([1])]}}, 400,
     "Unable to parse 'priority'"),
    ("reserved-parameter", FP32, {"document": {
        "parameters": {"triton_x": 1}, "inputs": [f32_input([1])]}}, 400,
     "parameter keys starting with 'triton_' are reserved for Triton usage"),
    ("parameter-of-bad-type", FP32, {"document": {
        "parameters": {"x": [1]}, "inputs": [f32_input([1])]}}, 400,
     "parameter 'x' has invalid type. It should be either 'int', 'bool', or 'string'."),
    ("shared-memory-input", FP32, {"document": {"inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [1, 3],
         "parameters": {"shared_memory_region": "r", "shared_memory_byte_size": 12}}]}}, 404,
     "Unable to find shared memory region: 'r'"),
    ("raw-request-multi-input", INT32, {
        "raw": b"\x00" * 64, "headers": {"Inference-Header-Content-Length": "0"}}, 400,
     "Raw request must only have 1 input (found 1) to be deduced but got 2 inputs in "
     "'identity_int32' model configuration"),
    ("raw-request-odd-size", FP32, {
        "raw": b"\x00" * 10, "headers": {"Inference-Header-Content-Length": "0"}}, 400,
     "input byte size mismatch for input 'raw_input' for model 'identity_fp32'. "
     "Expected 8, got 10"),
    ("unsupported-content-encoding", FP32, {
        "document": {"inputs": [f32_input([1])]}, "headers": {"Content-Encoding": "br"}}, 501,
     "Unsupported compression type"),
    ("corrupt-gzip", FP32, {"raw": b"not gzip at all", "headers": {"Content-Encoding": "gzip"}},
     400, "failed to decompress the request body"),
    ("unknown-model", "/v2/models/nope/infer", {"document": {"inputs": []}}, 404,
     "Request for unknown model: 'nope' is not found"),
    ("unknown-version", "/v2/models/identity_versions/versions/9/infer",
     {"document": {"inputs": [f32_input([1])]}}, 404,
     "Request for unknown model: 'identity_versions' version 9 is not found"),
]


@pytest.mark.parametrize("path, kwargs, status, message",
                         [case[1:] for case in BAD_REQUESTS],
                         ids=[case[0] for case in BAD_REQUESTS])
def test_bad_request_gets_clean_error(server, path, kwargs, status, message):
    reply = post(server, path, **kwargs)
    assert reply.status == status, reply.body
    assert message in reply.error
    assert_still_serving(server)


def test_a_request_of_100000_inputs_is_told_what_is_wrong_in_a_line(server):
    """The message lists 16 of the inputs and counts the rest, as over gRPC (Triton 2.51
    lists all 100,000: a 1.2 MB body)."""
    names = ["INPUT0", *(f"EXTRA{i}" for i in range(99_999))]
    reply = post(server, FP32, {"inputs": [f32_input([1], name=name) for name in names]})
    assert reply.status == 400
    assert reply.error == (
        "[request id: <id_unknown>] expected 1 inputs but got 100000 inputs for model "
        "'identity_fp32'. Got input(s) ['INPUT0'," + ",".join(f"'EXTRA{i}'" for i in range(15))
        + "] and 99984 more, but missing required input(s) ]. Please provide all required "
        "input(s).")
    assert_still_serving(server)


def test_unsupported_content_encoding_lists_accepted_ones(server):
    reply = post(server, FP32, {"inputs": [f32_input([1])]}, headers={"Content-Encoding": "br"})
    assert reply.status == 501
    assert reply.headers["accept-encoding"] == "gzip, deflate"


def test_client_that_hangs_up_mid_body(server):
    host, port = server.http_url.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            f"POST {FP32} HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n".encode()
            + b'{"inputs": ['
        )
    assert_still_serving(server)


def test_garbage_request_line(server):
    host, port = server.http_url.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"\x00\x01\x02 not http at all\r\n\r\n")
        sock.recv(4096)  # the server answers 400 or closes; either way it stays up
    assert_still_serving(server)




@pytest.mark.parametrize("head", [
    b"HEAD /v2/health/live HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
    b"HEAD /v2/" + b"a" * 20000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    b"HEAD /v2/health/\x1f HTTP/1.1\r\nHost: x\r\n\r\n",  # broken inside the URL
])
def test_a_refused_head_request_gets_no_body(server, head):
    """A HEAD refused while it is read (400, 414) gets the status and headers only, as HTTP
    requires: a client reads no body after an answer to HEAD, whatever its Content-Length.
    Found by the HTTP/1.1 fuzz (test_http1_fuzz.py); the body used to follow."""
    host, port = server.http_url.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(head)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith((b"HTTP/1.1 400", b"HTTP/1.1 414")), answer
    assert answer.endswith(b"\r\n\r\n") and answer.count(b"\r\n\r\n") == 1, answer
    assert_still_serving(server)
