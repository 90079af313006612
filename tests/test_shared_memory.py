"""The shared-memory extensions, driven by tritonclient's shared-memory utilities and clients.

A server started with --allow-client-shm=true serves the identity models of tests/models.py;
clients (http, grpc, and both aio clients) create POSIX regions with
`tritonclient.utils.shared_memory`, register them and run inferences whose inputs and outputs
live there. Expected texts are what Triton 2.51 answers for the same calls (compared with the
reference server); where Tritium deliberately differs (reserved keys, registration off by
default, bounds measured against the registered window) the test says so. After every test the
server must still serve and hold no region.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import time
from pathlib import Path

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as grpcaio
import tritonclient.http as httpclient
import tritonclient.http.aio as httpaio
import tritonclient.utils.shared_memory as shm
from tritonclient.grpc import service_pb2 as pb
from tritonclient.utils import InferenceServerException, serialize_byte_tensor
from tritonclient.utils import serialized_byte_size

from server_process import ServerProcess
from test_http import call

_KEYS = itertools.count()


@pytest.fixture(scope="module")
def shm_server(standard_repo: Path):
    with ServerProcess([standard_repo], "--allow-client-shm=true") as process:
        yield process


@pytest.fixture
def http(shm_server) -> httpclient.InferenceServerClient:
    client = httpclient.InferenceServerClient(shm_server.http_url)
    yield client
    # Every test leaves the server serving and holding no region.
    assert client.is_server_live() and client.is_model_ready("identity_fp32")
    client.unregister_system_shared_memory()
    assert client.get_system_shared_memory_status() == []
    client.close()


@pytest.fixture
def grpc_client(shm_server) -> grpcclient.InferenceServerClient:
    client = grpcclient.InferenceServerClient(shm_server.grpc_url)
    yield client
    client.close()


class Region:
    """A client-side POSIX shared-memory object (destroyed, and so unlinked, at the end)."""

    def __init__(self, byte_size: int) -> None:
        self.key = f"/shmtest_{os.getpid()}_{next(_KEYS)}"
        self.byte_size = byte_size
        self.handle = shm.create_shared_memory_region(self.key[1:], self.key, byte_size)

    def set(self, *values: np.ndarray, offset: int = 0) -> None:
        shm.set_shared_memory_region(self.handle, list(values), offset=offset)

    def get(self, dtype: type, shape: list[int], offset: int = 0) -> np.ndarray:
        return shm.get_contents_as_numpy(self.handle, dtype, shape, offset=offset)

    def destroy(self) -> None:
        shm.destroy_shared_memory_region(self.handle)


@pytest.fixture
def regions():
    made: list[Region] = []

    def make(byte_size: int) -> Region:
        made.append(Region(byte_size))
        return made[-1]

    yield make
    for region in made:
        region.destroy()


def mapped(server: ServerProcess, key: str) -> bool:
    """Whether the server process has the object `key` mapped."""
    return f"/dev/shm{key}" in Path(f"/proc/{server.process.pid}/maps").read_text()


def fp32_io(module, data: np.ndarray, input_region: str, output_region: str | None,
            byte_size: int, output_offset: int = 0, input_offset: int = 0):
    inp = module.InferInput("INPUT0", list(data.shape), "FP32")
    inp.set_shared_memory(input_region, byte_size, offset=input_offset)
    out = module.InferRequestedOutput("OUTPUT0")
    if output_region is not None:
        out.set_shared_memory(output_region, byte_size, offset=output_offset)
    return [inp], [out]


def described_only(result) -> dict:
    """An output written to shared memory, as the response shows it: name, datatype and shape,
    no data and no parameters (Triton's answer; gRPC adds an empty raw_output_contents entry)."""
    output = result.get_output("OUTPUT0")
    if isinstance(output, dict):
        return output
    assert list(result.get_response().raw_output_contents) == [b""]
    shown = {"name": output.name, "datatype": output.datatype, "shape": list(output.shape)}
    if output.parameters:
        shown["parameters"] = dict(output.parameters)
    return shown


def raw_infer(server, inputs: list, outputs: list | None = None, model: str = "identity_fp32"):
    body: dict = {"inputs": inputs}
    if outputs is not None:
        body["outputs"] = outputs
    return call(server, "POST", f"/v2/models/{model}/infer", json.dumps(body).encode())


def shm_input(region: str, byte_size: int | None = None, offset: int | None = None,
              shape: list[int] = (1, 16), datatype: str = "FP32") -> dict:
    params: dict = {"shared_memory_region": region}
    if byte_size is not None:
        params["shared_memory_byte_size"] = byte_size
    if offset is not None:
        params["shared_memory_offset"] = offset
    return {"name": "INPUT0", "datatype": datatype, "shape": list(shape), "parameters": params}


def shm_output(region: str, byte_size: int | None = None, offset: int | None = None) -> dict:
    out = shm_input(region, byte_size, offset)
    return {"name": "OUTPUT0", "parameters": out["parameters"]}


# -- registration and status ---------------------------------------------------------------------


def test_register_status_and_unregister_over_http(http, regions, shm_server):
    first, second = regions(64), regions(8192)
    http.register_system_shared_memory("first", first.key, 64)
    http.register_system_shared_memory("second", second.key, 4096, offset=4096)
    assert mapped(shm_server, first.key) and mapped(shm_server, second.key)
    assert http.get_system_shared_memory_status() == [
        {"name": "first", "key": first.key, "offset": 0, "byte_size": 64},
        {"name": "second", "key": second.key, "offset": 4096, "byte_size": 4096},
    ]
    assert http.get_system_shared_memory_status("second") == [
        {"name": "second", "key": second.key, "offset": 4096, "byte_size": 4096}]
    http.unregister_system_shared_memory("first")
    assert not mapped(shm_server, first.key) and mapped(shm_server, second.key)
    assert [r["name"] for r in http.get_system_shared_memory_status()] == ["second"]
    http.unregister_system_shared_memory()
    assert http.get_system_shared_memory_status() == []
    assert not mapped(shm_server, second.key)


def test_register_status_and_unregister_over_grpc(http, grpc_client, regions, shm_server):
    region = regions(128)
    grpc_client.register_system_shared_memory("g", region.key, 128)
    status = grpc_client.get_system_shared_memory_status(as_json=True)
    assert status == {"regions": {"g": {"name": "g", "key": region.key, "byte_size": "128"}}}
    one = grpc_client.get_system_shared_memory_status("g")
    assert one.regions["g"].key == region.key and one.regions["g"].byte_size == 128
    assert mapped(shm_server, region.key)
    grpc_client.unregister_system_shared_memory("g")
    assert grpc_client.get_system_shared_memory_status().regions == {}
    assert not mapped(shm_server, region.key)


def test_status_of_an_unknown_region(http, grpc_client):
    with pytest.raises(InferenceServerException) as info:
        http.get_system_shared_memory_status("nope")
    assert info.value.status() == "404"
    assert info.value.message() == "Unable to find system shared memory region: 'nope'"
    with pytest.raises(InferenceServerException) as info:
        grpc_client.get_system_shared_memory_status("nope")
    assert info.value.status() == "StatusCode.NOT_FOUND"
    assert info.value.message() == "Unable to find system shared memory region: 'nope'"


def test_unregistering_an_unknown_region_is_not_an_error(shm_server, http, grpc_client):
    http.unregister_system_shared_memory("never")
    grpc_client.unregister_system_shared_memory("never")
    reply = call(shm_server, "POST", "/v2/systemsharedmemory/region/never/unregister")
    assert (reply.status, reply.body, reply.headers["content-type"]) == (
        200, b"", "application/json")


def test_registering_a_name_twice_fails_as_triton(http, grpc_client, regions):
    region = regions(64)
    http.register_system_shared_memory("twice", region.key, 64)
    with pytest.raises(InferenceServerException) as info:
        http.register_system_shared_memory("twice", region.key, 64)
    assert info.value.status() == "400"
    assert info.value.message() == "shared memory region 'twice' already in manager"
    with pytest.raises(InferenceServerException) as info:
        grpc_client.register_system_shared_memory("twice", region.key, 32)
    assert info.value.status() == "StatusCode.ALREADY_EXISTS"
    # The first registration is untouched.
    assert http.get_system_shared_memory_status("twice")[0]["byte_size"] == 64


def test_two_names_may_share_one_key(http, regions):
    """Triton 2.51 fails the second (it reuses a closed descriptor); Tritium maps both."""
    region = regions(8192)
    http.register_system_shared_memory("a", region.key, 4096)
    http.register_system_shared_memory("b", region.key, 4096, offset=4096)
    assert [r["offset"] for r in http.get_system_shared_memory_status()] == [0, 4096]


def test_unknown_key_answers_as_triton(http, grpc_client):
    with pytest.raises(InferenceServerException) as info:
        http.register_system_shared_memory("r", "/shmtest_does_not_exist", 8)
    assert info.value.status() == "500"
    assert info.value.message() == "Unable to open shared memory region: '/shmtest_does_not_exist'"
    with pytest.raises(InferenceServerException) as info:
        grpc_client.register_system_shared_memory("r", "/shmtest_does_not_exist", 8)
    assert info.value.status() == "StatusCode.INTERNAL"


@pytest.mark.parametrize("offset, byte_size, message", [
    (0, 65, "failed to register shared memory region 'r': invalid args"),
    (60, 8, "failed to register shared memory region 'r': invalid args"),
    (0, 0, "failed to register shared memory region 'r': unable to process address "
           "spaceInvalid argument"),
    # mmap needs a page-aligned offset, in Triton as here.
    (8, 16, "failed to register shared memory region 'r': unable to process address "
            "spaceInvalid argument"),
])
def test_register_bounds_are_checked(http, grpc_client, regions, offset, byte_size, message):
    region = regions(64)
    with pytest.raises(InferenceServerException) as info:
        http.register_system_shared_memory("r", region.key, byte_size, offset=offset)
    assert (info.value.status(), info.value.message()) == ("400", message)
    with pytest.raises(InferenceServerException) as info:
        grpc_client.register_system_shared_memory("r", region.key, byte_size, offset=offset)
    assert info.value.status() == "StatusCode.INVALID_ARGUMENT"
    assert info.value.message() == message
    assert http.get_system_shared_memory_status() == []


@pytest.mark.parametrize("body, status, message", [
    ({"offset": 0, "byte_size": 8}, 400, "Shared memory register request has no 'key' field"),
    ({"key": "/k"}, 400, "Shared memory register request has no 'byte_size' field"),
    ({"key": 5, "byte_size": 8}, 400, "attempt to access JSON non-string as string"),
    ({"key": "/k", "offset": -1, "byte_size": 8}, 400,
     "attempt to access JSON non-unsigned-integer as unsigned-integer"),
    ({"key": "/k", "byte_size": "8"}, 400,
     "attempt to access JSON non-unsigned-integer as unsigned-integer"),
    ([1], 400, "Shared memory register request has no 'key' field"),
])
def test_malformed_register_bodies(shm_server, http, body, status, message):
    reply = call(shm_server, "POST", "/v2/systemsharedmemory/region/r/register",
                 json.dumps(body).encode())
    assert (reply.status, reply.error) == (status, message)


def test_register_body_that_is_not_json(shm_server, http):
    reply = call(shm_server, "POST", "/v2/systemsharedmemory/region/r/register", b"")
    assert (reply.status, reply.error) == (
        400, "failed to parse the request JSON buffer: The document is empty. at 0")
    reply = call(shm_server, "POST", "/v2/systemsharedmemory/region/r/register", b"{nope")
    assert reply.status == 400 and reply.error.startswith("failed to parse the request JSON")


def test_wrong_methods_and_paths(shm_server, http):
    for method, path in [("POST", "/v2/systemsharedmemory/status"),
                         ("GET", "/v2/systemsharedmemory/region/r/register"),
                         ("GET", "/v2/systemsharedmemory/unregister"),
                         ("POST", "/v2/cudasharedmemory/region/r/status")]:
        reply = call(shm_server, method, path)
        assert (reply.status, reply.error) == (405, "Method Not Allowed"), (method, path)
    for path in ["/v2/systemsharedmemory/region//register", "/v2/systemsharedmemory/register",
                 "/v2/systemsharedmemory/region/r/other", "/v2/systemsharedmemory"]:
        assert call(shm_server, "POST", path).status == 404, path


# -- keys that are never a client's --------------------------------------------------------------


@pytest.mark.parametrize("key", ["/../etc/passwd", "/a/b", "", "/", "..", "/.", "a/../../b",
                                 "/x\0y"])
def test_keys_outside_dev_shm_are_refused(http, grpc_client, key):
    with pytest.raises(InferenceServerException) as info:
        http.register_system_shared_memory("r", key, 8)
    assert info.value.status() == "500"
    assert info.value.message() == f"Unable to open shared memory region: '{key}'"
    with pytest.raises(InferenceServerException) as info:
        grpc_client.register_system_shared_memory("r", key, 8)
    assert info.value.status() == "StatusCode.INTERNAL"
    assert http.get_system_shared_memory_status() == []


@pytest.mark.parametrize("key", ["/tritium_ring", "tritium", "/triton_python_backend_shm_region_1"])
def test_keys_the_server_reserves_are_refused_even_when_they_exist(http, grpc_client, key):
    handle = shm.create_shared_memory_region("reserved", key, 64)
    try:
        for client, status in ((http, "400"), (grpc_client, "StatusCode.INVALID_ARGUMENT")):
            with pytest.raises(InferenceServerException) as info:
                client.register_system_shared_memory("r", key, 64)
            assert info.value.status() == status
            assert f"shared memory key '{key}' is reserved for the server's own use" in \
                info.value.message()
    finally:
        shm.destroy_shared_memory_region(handle)
    assert http.get_system_shared_memory_status() == []


def test_symlinks_and_non_files_in_dev_shm_are_refused(http, regions, tmp_path):
    region = regions(64)
    link = f"shmtest_link_{os.getpid()}"
    target = tmp_path / "secret"
    target.write_bytes(b"s" * 64)
    directory = f"shmtest_dir_{os.getpid()}"
    os.symlink(target, f"/dev/shm/{link}")
    os.mkdir(f"/dev/shm/{directory}")
    try:
        for key in (f"/{link}", f"/{directory}"):
            with pytest.raises(InferenceServerException) as info:
                http.register_system_shared_memory("r", key, 64)
            assert info.value.message() == f"Unable to open shared memory region: '{key}'"
    finally:
        os.unlink(f"/dev/shm/{link}")
        os.rmdir(f"/dev/shm/{directory}")
    http.register_system_shared_memory("r", region.key, 64)  # a plain object still works


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
    request = _grpc_request([("INPUT0", {"shared_memory_region": "in",
                                         "shared_memory_byte_size": 64})],
                            [("OUTPUT0", parameters)])
    with pytest.raises(grpc.RpcError) as info:
        _stub(shm_server).ModelInfer(request)
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
    request = _grpc_request([("INPUT0", parameters)], [])
    request.raw_input_contents.append(b"\0" * 64)
    with pytest.raises(grpc.RpcError) as info:
        _stub(shm_server).ModelInfer(request)
    assert (info.value.code().name, info.value.details()) == ("INVALID_ARGUMENT", message)


def test_grpc_input_with_contents_and_a_region(shm_server, http, regions):
    region = regions(64)
    http.register_system_shared_memory("in", region.key, 64)
    request = _grpc_request([("INPUT0", {"shared_memory_region": "in",
                                         "shared_memory_byte_size": 64})], [])
    request.inputs[0].contents.fp32_contents.extend([1.0] * 16)
    with pytest.raises(grpc.RpcError) as info:
        _stub(shm_server).ModelInfer(request)
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


def _stub(server: ServerProcess):
    from tritonclient.grpc import service_pb2_grpc as pbg

    return pbg.GRPCInferenceServiceStub(grpc.insecure_channel(server.grpc_url))


def _grpc_request(inputs: list, outputs: list) -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name="identity_fp32")
    for target, entries in ((request.inputs, inputs), (request.outputs, outputs)):
        for name, parameters in entries:
            entry = target.add(name=name)
            if target is request.inputs:
                entry.datatype, entry.shape[:] = "FP32", [1, 16]
            for key, value in parameters.items():
                if isinstance(value, str):
                    entry.parameters[key].string_param = value
                else:
                    entry.parameters[key].int64_param = value
    return request


# -- unregistering while a request uses the region -----------------------------------------------


def test_unregister_during_a_request_unmaps_when_it_ends(http, shm_server, regions):
    """As Triton: the request in flight completes on the region, which is unmapped after it."""
    data = np.arange(16, dtype=np.float32).reshape(1, 16)
    inp, out = regions(64), regions(64)
    inp.set(data)
    http.register_system_shared_memory("in", inp.key, 64)
    http.register_system_shared_memory("out", out.key, 64)
    client = httpclient.InferenceServerClient(shm_server.http_url, concurrency=2)
    inputs, outputs = fp32_io(httpclient, data, "in", "out", 64)
    pending = client.async_infer("identity_slow", inputs, outputs=outputs)
    time.sleep(0.1)  # the slow model (300 ms) now holds the request
    http.unregister_system_shared_memory()
    assert http.get_system_shared_memory_status() == []
    result = pending.get_result()
    assert described_only(result)["shape"] == [1, 16]
    np.testing.assert_array_equal(out.get(np.float32, [1, 16]), data)
    assert not mapped(shm_server, inp.key) and not mapped(shm_server, out.key)
    client.close()


# -- CUDA shared memory: answers as Triton on a machine without GPUs -----------------------------


# What tritonclient's cuda_shared_memory.get_raw_handle gives: a base64 cudaIpcMemHandle_t.
_HANDLE = base64.b64encode(b"\x01" * 64)


def test_cuda_shared_memory_as_triton_without_gpus(shm_server, http, grpc_client, regions):
    assert http.get_cuda_shared_memory_status() == []
    assert grpc_client.get_cuda_shared_memory_status().regions == {}
    for client, status in ((http, "400"), (grpc_client, "StatusCode.INVALID_ARGUMENT")):
        with pytest.raises(InferenceServerException) as info:
            client.register_cuda_shared_memory("c", _HANDLE, 0, 8)
        assert (info.value.status(), info.value.message()) == (
            status, "failed to register shared memory region: invalid args")
    with pytest.raises(InferenceServerException) as info:
        http.get_cuda_shared_memory_status("c")
    assert info.value.message() == "Unable to find cuda shared memory region: 'c'"
    region = regions(64)
    http.register_system_shared_memory("sys", region.key, 64)
    with pytest.raises(InferenceServerException) as info:
        grpc_client.get_cuda_shared_memory_status("sys")
    assert info.value.message() == (
        "The region named 'sys' is registered as system shared memory, not CUDA shared memory")
    with pytest.raises(InferenceServerException) as info:
        grpc_client.register_cuda_shared_memory("sys", _HANDLE, 0, 8)
    assert info.value.status() == "StatusCode.ALREADY_EXISTS"
    http.unregister_cuda_shared_memory("c")
    grpc_client.unregister_cuda_shared_memory()
    # A CUDA unregister leaves system regions alone.
    assert [r["name"] for r in http.get_system_shared_memory_status()] == ["sys"]
    reply = call(shm_server, "POST", "/v2/cudasharedmemory/region/c/register",
                 json.dumps({"raw_handle": {"b64": "AAAA"}, "device_id": 0,
                             "byte_size": 8}).encode())
    assert (reply.status, reply.error) == (
        400, "'raw_handle' must be a valid base64 encoded cudaIpcMemHandle_t")


def test_metadata_lists_the_extensions_when_enabled(http):
    extensions = http.get_server_metadata()["extensions"]
    assert "system_shared_memory" in extensions and "cuda_shared_memory" in extensions


# -- the default: registration is off -----------------------------------------------------------


def test_registration_is_off_by_default(server):
    """Without --allow-client-shm=true, no client region can be registered (Triton 2.51 has no
    such switch and always allows it); status answers, and lists nothing."""
    region = Region(64)
    try:
        client = httpclient.InferenceServerClient(server.http_url)
        with pytest.raises(InferenceServerException) as info:
            client.register_system_shared_memory("r", region.key, 64)
        assert info.value.status() == "501"
        assert "--allow-client-shm=true" in info.value.message()
        gclient = grpcclient.InferenceServerClient(server.grpc_url)
        with pytest.raises(InferenceServerException) as info:
            gclient.register_system_shared_memory("r", region.key, 64)
        assert info.value.status() == "StatusCode.UNIMPLEMENTED"
        with pytest.raises(InferenceServerException) as info:
            gclient.register_cuda_shared_memory("c", _HANDLE, 0, 8)
        assert info.value.status() == "StatusCode.UNIMPLEMENTED"
        assert client.get_system_shared_memory_status() == []
        assert gclient.get_system_shared_memory_status().regions == {}
        client.unregister_system_shared_memory()
        extensions = client.get_server_metadata()["extensions"]
        assert "system_shared_memory" not in extensions
        assert "cuda_shared_memory" not in extensions
        reply = raw_infer(server, [shm_input("r", 64)])
        assert (reply.status, reply.error) == (404, "Unable to find shared memory region: 'r'")
        assert not mapped(server, region.key)
        assert client.is_server_ready()
        client.close()
        gclient.close()
    finally:
        region.destroy()
