"""Inference with tensors in client shared memory: inputs read from registered regions and
outputs written into them (FP32 and BYTES, at offsets), through tritonclient's http, grpc, aio
and streaming clients, and every bounds and parameter error over raw HTTP and gRPC.

Expected texts are what Triton 2.51 answers for the same requests (compared with the reference
server). One deliberate difference: tensor bounds are measured against the registered window
(Triton 2.51 lets a tensor at a window's end read past its mapping).
"""

from __future__ import annotations

import asyncio

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as grpcaio
import tritonclient.http as httpclient
import tritonclient.http.aio as httpaio
from tritonclient.utils import InferenceServerException, serialize_byte_tensor, serialized_byte_size

from support.shared_memory_fixtures import (
    described_only,
    fp32_io,
    grpc_request,
    raw_infer,
    shm_input,
    shm_output,
    stub,
)

# The fixtures (shm_server, http, grpc_client, regions) come from there too.
pytest_plugins = ["support.shared_memory_fixtures"]


# -- inference with tensors in shared memory -----------------------------------------------------


@pytest.mark.parametrize("module", [httpclient, grpcclient], ids=["http", "grpc"])
def test_fp32_input_and_output_in_shared_memory(http, shm_server, regions, module):
    data = np.arange(16, dtype=np.float32).reshape(1, 16) * 1.5
    inp, out = regions(64), regions(64)
    inp.set(data)
    client = module.InferenceServerClient(
        shm_server.http_url if module is httpclient else shm_server.grpc_url)
    client.register_system_shared_memory("in", inp.key, 64)
    client.register_system_shared_memory("out", out.key, 64)
    inputs, outputs = fp32_io(module, data, "in", "out", 64)
    result = client.infer("identity_fp32", inputs, outputs=outputs)
    # The output went into the region; the response describes it and carries no data.
    assert described_only(result) == {"name": "OUTPUT0", "datatype": "FP32", "shape": [1, 16]}
    np.testing.assert_array_equal(out.get(np.float32, [1, 16]), data)
    client.close()


def test_input_in_shared_memory_output_in_the_response(http, regions):
    data = np.linspace(-1, 1, 16, dtype=np.float32).reshape(1, 16)
    inp = regions(64)
    inp.set(data)
    http.register_system_shared_memory("in", inp.key, 64)
    inputs, outputs = fp32_io(httpclient, data, "in", None, 64)
    result = http.infer("identity_fp32", inputs, outputs=outputs)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)


def test_offsets_within_a_registered_window(http, grpc_client, regions):
    """Tensor offsets count from the registered window, which itself starts at an offset."""
    region = regions(8192)
    data = np.arange(8, dtype=np.float32).reshape(1, 8)
    region.set(data, offset=4096 + 100)
    http.register_system_shared_memory("window", region.key, 4096, offset=4096)
    for module, client in ((httpclient, http), (grpcclient, grpc_client)):
        region.set(np.zeros(8, dtype=np.float32), offset=4096 + 1000)
        inputs, outputs = fp32_io(module, data, "window", "window", 32,
                                  input_offset=100, output_offset=1000)
        client.infer("identity_fp32", inputs, outputs=outputs)
        np.testing.assert_array_equal(region.get(np.float32, [1, 8], offset=4096 + 1000), data)


@pytest.mark.parametrize("module", [httpclient, grpcclient], ids=["http", "grpc"])
def test_bytes_input_and_output_in_shared_memory(http, shm_server, regions, module):
    data = np.array([[b"hello", b"", b"w\xc3\xb6rld", b"\x00\x01"]], dtype=np.object_)
    serialized = serialize_byte_tensor(data)
    size = serialized_byte_size(serialized)
    region = regions(256)
    region.set(serialized)
    client = module.InferenceServerClient(
        shm_server.http_url if module is httpclient else shm_server.grpc_url)
    client.register_system_shared_memory("b", region.key, 256)
    inp = module.InferInput("INPUT0", [1, 4], "BYTES")
    inp.set_shared_memory("b", size)
    out = module.InferRequestedOutput("OUTPUT0")
    out.set_shared_memory("b", 128, offset=128)
    result = client.infer("identity_bytes", [inp], outputs=[out])
    assert described_only(result) == {"name": "OUTPUT0", "datatype": "BYTES", "shape": [1, 4]}
    got = region.get(np.object_, [1, 4], offset=128)
    assert got.tolist() == data.tolist()
    # An output region too small for the strings fails after inference, as Triton's does.
    small = module.InferRequestedOutput("OUTPUT0")
    small.set_shared_memory("b", size - 1, offset=128)
    with pytest.raises(InferenceServerException) as info:
        client.infer("identity_bytes", [inp], outputs=[small])
    assert info.value.message() == (
        f"shared memory size specified with the request for output 'OUTPUT0' ({size - 1} "
        f"bytes) should be at least {size} bytes to hold the results")
    client.close()


def test_aio_clients(http, shm_server, regions):
    data = np.arange(16, dtype=np.float32).reshape(1, 16)
    inp, out = regions(64), regions(64)
    inp.set(data)

    async def run() -> None:
        for module, url in ((httpaio, shm_server.http_url), (grpcaio, shm_server.grpc_url)):
            client = module.InferenceServerClient(url)
            await client.register_system_shared_memory("in", inp.key, 64)
            await client.register_system_shared_memory("out", out.key, 64)
            status = await client.get_system_shared_memory_status()
            names = [r["name"] for r in status] if module is httpaio else sorted(status.regions)
            assert names == ["in", "out"]
            out.set(np.zeros(16, dtype=np.float32))
            inputs, outputs = fp32_io(module, data, "in", "out", 64)
            result = await client.infer("identity_fp32", inputs, outputs=outputs)
            assert described_only(result)["shape"] == [1, 16]
            np.testing.assert_array_equal(out.get(np.float32, [1, 16]), data)
            await client.unregister_system_shared_memory()
            await client.close()

    asyncio.run(run())


def test_grpc_stream_with_shared_memory(http, shm_server, regions):
    data = np.arange(16, dtype=np.float32).reshape(1, 16)
    inp, out = regions(64), regions(64)
    inp.set(data)
    http.register_system_shared_memory("in", inp.key, 64)
    http.register_system_shared_memory("out", out.key, 64)
    results: list = []
    client = grpcclient.InferenceServerClient(shm_server.grpc_url)
    client.start_stream(callback=lambda result, error: results.append((result, error)))
    inputs, outputs = fp32_io(grpcclient, data, "in", "out", 64)
    client.async_stream_infer("identity_fp32", inputs, outputs=outputs)
    client.stop_stream()
    client.close()
    [(result, error)] = results
    assert error is None
    assert described_only(result) == {"name": "OUTPUT0", "datatype": "FP32", "shape": [1, 16]}
    np.testing.assert_array_equal(out.get(np.float32, [1, 16]), data)


# -- every bounds error, over both protocols ------------------------------------------------------

_OFFSET = "Invalid offset for shared memory region: '{}'"
_SPAN = "Invalid offset + byte size for shared memory region: '{}'"


@pytest.mark.parametrize("offset, byte_size, message", [
    (64, 0, _OFFSET.format("in")),
    (65, 64, _OFFSET.format("in")),
    (2**64 - 1, 8, _OFFSET.format("in")),
    (8, 64, _SPAN.format("in")),
    (0, 65, _SPAN.format("in")),
    (0, 60, "[request id: <id_unknown>] input byte size mismatch for input 'INPUT0' for model "
            "'identity_fp32'. Expected 64, got 60"),
])
def test_input_bounds_over_http(shm_server, http, regions, offset, byte_size, message):
    region = regions(64)
    http.register_system_shared_memory("in", region.key, 64)
    reply = raw_infer(shm_server, [shm_input("in", byte_size, offset)])
    assert (reply.status, reply.error) == (400, message)


@pytest.mark.parametrize("offset, byte_size, message", [
    (64, 0, _OFFSET.format("in")),
    (-8, 64, _OFFSET.format("in")),  # read as size_t, as Triton does
    (8, 64, _SPAN.format("in")),
    (0, -1, _SPAN.format("in")),
    (0, 32, "[request id: <id_unknown>] input byte size mismatch for input 'INPUT0' for model "
            "'identity_fp32'. Expected 64, got 32"),
])
def test_input_bounds_over_grpc(http, grpc_client, regions, offset, byte_size, message):
    region = regions(64)
    http.register_system_shared_memory("in", region.key, 64)
    inp = grpcclient.InferInput("INPUT0", [1, 16], "FP32")
    inp.set_shared_memory("in", byte_size, offset=offset)
    with pytest.raises(InferenceServerException) as info:
        grpc_client.infer("identity_fp32", [inp])
    assert info.value.status() == "StatusCode.INVALID_ARGUMENT"
    assert info.value.message() == message


def test_window_bounds_hold_past_a_registered_offset(shm_server, http, regions):
    """Triton 2.51 bounds a tensor by offset+size of the window, so a tensor at the window's end
    reads past the mapping (it answers garbage); Tritium refuses it."""
    region = regions(8192)
    http.register_system_shared_memory("q", region.key, 4096, offset=4096)
    reply = raw_infer(shm_server, [shm_input("q", 64, 4096)])
    assert (reply.status, reply.error) == (400, _OFFSET.format("q"))
    reply = raw_infer(shm_server, [shm_input("q", 64, 4033)])
    assert (reply.status, reply.error) == (400, _SPAN.format("q"))
    assert raw_infer(shm_server, [shm_input("q", 64, 4032)]).status == 200


@pytest.mark.parametrize("output, status, message, content_type", [
    (shm_output("out", 32, 0), 500, "shared memory size specified with the request for output "
     "'OUTPUT0' (32 bytes) should be at least 64 bytes to hold the results", "text/plain"),
    (shm_output("out", 24, 40), 500, "shared memory size specified with the request for output "
     "'OUTPUT0' (24 bytes) should be at least 64 bytes to hold the results", "text/plain"),
    (shm_output("out", 0, 64), 400, _OFFSET.format("out"), "application/json"),
    (shm_output("out", 65, 0), 400, _SPAN.format("out"), "application/json"),
    (shm_output("out"), 400, _SPAN.format("out"), "application/json"),
    (shm_output("nope", 64), 404, "Unable to find shared memory region: 'nope'",
     "application/json"),
    ({"name": "OUTPUT0", "parameters": {"shared_memory_region": "out",
                                        "shared_memory_byte_size": 64, "binary_data": True}},
     400, "Output can't set both 'shared_memory_region' and 'binary_data'", "application/json"),
    ({"name": "OUTPUT0", "parameters": {"shared_memory_region": "out",
                                        "shared_memory_byte_size": 64, "classification": 2}},
     400, "Output can't set both 'shared_memory_region' and 'classification'",
     "application/json"),
])
def test_output_errors_over_http(shm_server, http, regions, output, status, message,
                                 content_type):
    inp, out = regions(64), regions(64)
    http.register_system_shared_memory("in", inp.key, 64)
    http.register_system_shared_memory("out", out.key, 64)
    reply = raw_infer(shm_server, [shm_input("in", 64)], [output])
    assert (reply.status, reply.error) == (status, message)
    assert reply.headers["content-type"] == content_type


@pytest.mark.parametrize("parameters, code, message", [
    ({"shared_memory_region": "out", "shared_memory_byte_size": 32}, "INTERNAL",
     "shared memory size specified with the request for output 'OUTPUT0' (32 bytes) should be "
     "at least 64 bytes to hold the results"),
    ({"shared_memory_region": "out", "shared_memory_byte_size": 64,
      "shared_memory_offset": 8}, "INVALID_ARGUMENT", _SPAN.format("out")),
    ({"shared_memory_region": "out"}, "INVALID_ARGUMENT",
     "'shared_memory_byte_size' must be specified along with 'shared_memory_region' parameter "
     "for tensor 'OUTPUT0'"),
    ({"shared_memory_region": "out", "shared_memory_byte_size": 64, "classification": 2},
     "INVALID_ARGUMENT", "output can't set both 'shared_memory_region' and 'classification'"),
    ({"shared_memory_region": "nope", "shared_memory_byte_size": 64}, "NOT_FOUND",
     "Unable to find shared memory region: 'nope'"),
])
def test_output_errors_over_grpc(shm_server, http, regions, parameters, code, message):
    inp, out = regions(64), regions(64)
    http.register_system_shared_memory("in", inp.key, 64)
    http.register_system_shared_memory("out", out.key, 64)
    request = grpc_request([("INPUT0", {"shared_memory_region": "in",
                                         "shared_memory_byte_size": 64})],
                            [("OUTPUT0", parameters)])
    with pytest.raises(grpc.RpcError) as info:
        stub(shm_server).ModelInfer(request)
    assert (info.value.code().name, info.value.details()) == (code, message)


@pytest.mark.parametrize("parameters, message", [
    ({"shared_memory_region": "in"}, "'shared_memory_byte_size' must be specified along with "
     "'shared_memory_region' parameter for tensor 'INPUT0'"),
    ({"shared_memory_byte_size": 64}, "'shared_memory_byte_size' can not be specified without "
     "'shared_memory_region' parameter for tensor 'INPUT0'"),
    ({"shared_memory_offset": 0}, "'shared_memory_offset' can not be specified without "
     "'shared_memory_region' parameter for tensor 'INPUT0'"),
    ({"shared_memory_region": "in", "shared_memory_byte_size": "64"},
     "invalid value type for 'shared_memory_byte_size' parameter for tensor 'INPUT0', expected "
     "int64_param."),
    ({"shared_memory_region": 5, "shared_memory_byte_size": 64},
     "invalid value type for 'shared_memory_region' parameter for tensor 'INPUT0', expected "
     "string_param."),
])
def test_malformed_grpc_input_parameters(shm_server, http, regions, parameters, message):
    region = regions(64)
    http.register_system_shared_memory("in", region.key, 64)
    request = grpc_request([("INPUT0", parameters)], [])
    request.raw_input_contents.append(b"\0" * 64)
    with pytest.raises(grpc.RpcError) as info:
        stub(shm_server).ModelInfer(request)
    assert (info.value.code().name, info.value.details()) == ("INVALID_ARGUMENT", message)


def test_grpc_input_with_contents_and_a_region(shm_server, http, regions):
    region = regions(64)
    http.register_system_shared_memory("in", region.key, 64)
    request = grpc_request([("INPUT0", {"shared_memory_region": "in",
                                         "shared_memory_byte_size": 64})], [])
    request.inputs[0].contents.fp32_contents.extend([1.0] * 16)
    with pytest.raises(grpc.RpcError) as info:
        stub(shm_server).ModelInfer(request)
    assert info.value.details() == ("unexpected 'content' provided when using shared memory "
                                    "for input tensor 'INPUT0' for model 'identity_fp32'")


@pytest.mark.parametrize("parameters, message", [
    ({"shared_memory_region": "in"}, _SPAN.format("in")),
    ({"shared_memory_region": "in", "shared_memory_byte_size": "64"},
     "Unable to parse 'shared_memory_byte_size': attempt to access JSON non-unsigned-integer as "
     "unsigned-integer"),
    ({"shared_memory_region": "in", "shared_memory_byte_size": 64, "shared_memory_offset": -1},
     "Unable to parse 'shared_memory_offset': attempt to access JSON non-unsigned-integer as "
     "unsigned-integer"),
    ({"shared_memory_region": 3, "shared_memory_byte_size": 64},
     "Unable to parse 'shared_memory_region': attempt to access JSON non-string as string"),
])
def test_malformed_http_input_parameters(shm_server, http, regions, parameters, message):
    region = regions(64)
    http.register_system_shared_memory("in", region.key, 64)
    reply = raw_infer(shm_server, [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 16],
                                    "parameters": parameters}])
    assert (reply.status, reply.error) == (400, message)
