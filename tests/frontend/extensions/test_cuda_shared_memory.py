"""The CUDA shared-memory extension over HTTP and gRPC on CPU-only machines: a server without
GPUs answers as Triton built without GPU support; a server with a fake GPU (NVML from the H200
probe, the stand-in CUDA binding of support/fake_cuda) registers client allocations, lists them
in Triton's status shapes, reads inputs from them and writes outputs into them, checks bounds
exactly as for system shared memory, and closes each IPC mapping on unregister or after the last
request in flight that uses it. Every registration error has Triton's code and message.

The same flows on real device memory, with tritonclient.utils.cuda_shared_memory, are in
tests/gpus/test_cuda_shared_memory_gpu.py.
"""

from __future__ import annotations

import base64
import json
import time

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.cuda_shared_memory_fixtures import fake_cuda_env
from support.gated_model import write_gated
from support.gpu import fake_gpu_env
from support.raw_http import call
from support.server_process import ServerProcess
from support.shared_memory_fixtures import (
    described_only,
    fp32_io,
    infer_in_flight,
    mapped,
    raw_infer,
    shm_input,
    shm_output,
)

pytest_plugins = ["support.shared_memory_fixtures", "support.cuda_shared_memory_fixtures"]

_HANDLE = base64.b64encode(b"\x01" * 64)


def _clients(server: ServerProcess):
    return (httpclient.InferenceServerClient(server.http_url),
            grpcclient.InferenceServerClient(server.grpc_url))


def _refused(call_, status: str) -> str:
    with pytest.raises(InferenceServerException) as info:
        call_()
    assert info.value.status() == status, info.value.message()
    return info.value.message()


@pytest.fixture
def clients(fake_gpu_server):
    http, grpc_client = _clients(fake_gpu_server)
    yield http, grpc_client
    # Every test leaves the server serving and holding no region.
    assert http.is_server_ready()
    http.unregister_cuda_shared_memory()
    http.unregister_system_shared_memory()
    assert http.get_cuda_shared_memory_status() == []
    assert http.get_system_shared_memory_status() == []
    http.close()
    grpc_client.close()


# -- a server without GPUs -----------------------------------------------------------------------


def test_without_gpus_as_triton_on_a_machine_without_gpus(no_gpu_server, regions):
    http, grpc_client = _clients(no_gpu_server)
    assert http.get_cuda_shared_memory_status() == []
    assert grpc_client.get_cuda_shared_memory_status().regions == {}
    for client, status in ((http, "400"), (grpc_client, "StatusCode.INVALID_ARGUMENT")):
        assert _refused(lambda c=client: c.register_cuda_shared_memory("c", _HANDLE, 0, 8),
                        status) == (
            "failed to register shared memory region: invalid args")
    for client, status in ((http, "404"), (grpc_client, "StatusCode.NOT_FOUND")):
        assert _refused(lambda c=client: c.get_cuda_shared_memory_status("c"), status) == (
            "Unable to find cuda shared memory region: 'c'")
    region = regions(64)
    http.register_system_shared_memory("sys", region.key, 64)
    assert _refused(lambda: grpc_client.get_cuda_shared_memory_status("sys"),
                    "StatusCode.NOT_FOUND") == (
        "The region named 'sys' is registered as system shared memory, not CUDA shared memory")
    http.unregister_cuda_shared_memory("sys")  # not a CUDA region: nothing happens
    http.unregister_cuda_shared_memory("c")
    grpc_client.unregister_cuda_shared_memory()
    assert [r["name"] for r in http.get_system_shared_memory_status()] == ["sys"]
    reply = call(no_gpu_server, "POST", "/v2/cudasharedmemory/region/c/register",
                 json.dumps({"raw_handle": {"b64": "AAAA"}, "device_id": 0,
                             "byte_size": 8}).encode())
    assert (reply.status, reply.error) == (
        400, "'raw_handle' must be a valid base64 encoded cudaIpcMemHandle_t")
    http.unregister_system_shared_memory()
    http.close()
    grpc_client.close()


# -- registration, status and unregistration with a (fake) GPU -----------------------------------


def test_register_status_and_unregister(clients, fake_gpu_server, device_regions):
    http, grpc_client = clients
    first, second = device_regions(64), device_regions(4096)
    http.register_cuda_shared_memory("first", first.raw_handle, 0, 64)
    grpc_client.register_cuda_shared_memory("second", second.raw_handle, 0, 1024)
    assert mapped(fake_gpu_server, first.key) and mapped(fake_gpu_server, second.key)
    # Triton's shapes: name, device_id, byte_size (no key, no offset).
    assert http.get_cuda_shared_memory_status() == [
        {"name": "first", "device_id": 0, "byte_size": 64},
        {"name": "second", "device_id": 0, "byte_size": 1024}]
    assert http.get_cuda_shared_memory_status("second") == [
        {"name": "second", "device_id": 0, "byte_size": 1024}]
    status = grpc_client.get_cuda_shared_memory_status().regions
    assert {n: (r.name, r.device_id, r.byte_size) for n, r in status.items()} == {
        "first": ("first", 0, 64), "second": ("second", 0, 1024)}
    # CUDA regions are not system regions.
    assert http.get_system_shared_memory_status() == []
    assert _refused(lambda: http.get_system_shared_memory_status("first"), "404") == (
        "The region named 'first' is registered as CUDA shared memory, not system shared memory")
    http.unregister_system_shared_memory("first")
    http.unregister_system_shared_memory()
    assert len(http.get_cuda_shared_memory_status()) == 2
    # Unregistering closes the IPC mapping.
    grpc_client.unregister_cuda_shared_memory("first")
    assert not mapped(fake_gpu_server, first.key) and mapped(fake_gpu_server, second.key)
    assert [r["name"] for r in http.get_cuda_shared_memory_status()] == ["second"]
    http.unregister_cuda_shared_memory()
    assert grpc_client.get_cuda_shared_memory_status().regions == {}
    assert not mapped(fake_gpu_server, second.key)
    http.unregister_cuda_shared_memory("second")  # unknown now: not an error


def test_one_allocation_under_two_names(clients, fake_gpu_server, device_regions):
    """CUDA counts the opens of one handle: the mapping stays until both names are gone."""
    http, _ = clients
    region = device_regions(64)
    http.register_cuda_shared_memory("a", region.raw_handle, 0, 64)
    http.register_cuda_shared_memory("b", region.raw_handle, 0, 32)
    http.unregister_cuda_shared_memory("a")
    assert mapped(fake_gpu_server, region.key)
    http.unregister_cuda_shared_memory("b")
    assert not mapped(fake_gpu_server, region.key)


def test_registering_a_name_twice_fails_as_triton(clients, device_regions, regions):
    http, grpc_client = clients
    device, system = device_regions(64), regions(64)
    http.register_cuda_shared_memory("c", device.raw_handle, 0, 64)
    http.register_system_shared_memory("sys", system.key, 64)
    for name in ("c", "sys"):
        for client, status in ((http, "400"), (grpc_client, "StatusCode.ALREADY_EXISTS")):
            assert _refused(
                lambda c=client, n=name: c.register_cuda_shared_memory(n, device.raw_handle,
                                                                       0, 64),
                status) == f"shared memory region '{name}' already in manager"
    assert _refused(lambda: http.register_system_shared_memory("c", system.key, 64),
                    "400") == "shared memory region 'c' already in manager"


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_registration_errors(clients, fake_gpu_server, device_regions, protocol):
    http, grpc_client = clients
    client = http if protocol == "http" else grpc_client
    status = "400" if protocol == "http" else "StatusCode.INVALID_ARGUMENT"
    region = device_regions(64)

    def refused(handle: bytes, device_id: int, byte_size: int) -> str:
        return _refused(lambda: client.register_cuda_shared_memory(
            "c", handle, device_id, byte_size), status)

    assert refused(region.raw_handle, 1, 64) == (
        "failed to register CUDA shared memory region 'c': device_id 1 is not a GPU of this "
        "server (its CUDA device ids: 0)")
    assert refused(_HANDLE, 0, 64) == (
        "failed to register CUDA shared memory region 'c': failed to open CUDA IPC handle: "
        "invalid argument")
    # Larger than the allocation: refused, and the handle is closed again.
    assert refused(region.raw_handle, 0, 65) == (
        "failed to register shared memory region 'c': invalid args")
    assert not mapped(fake_gpu_server, region.key)
    assert http.get_cuda_shared_memory_status() == []


def test_grpc_handle_of_the_wrong_size(clients, device_regions):
    _, grpc_client = clients
    for handle in (b"", base64.b64encode(b"\x01" * 65)):
        assert _refused(lambda h=handle: grpc_client.register_cuda_shared_memory("c", h, 0, 8),
                        "StatusCode.INVALID_ARGUMENT").startswith(
            "failed to register CUDA shared memory region 'c': 'raw_handle' must be a "
            "cudaIpcMemHandle_t of 64 bytes, not ")


def test_without_the_cuda_binding(standard_repo, tmp_path, device_regions):
    """A server with GPUs but without cuda-python says what to install."""
    hidden = tmp_path / "no_cuda_bindings"
    (hidden / "cuda").mkdir(parents=True)
    (hidden / "cuda" / "__init__.py").write_text("")  # a `cuda` package with no `bindings`
    env = fake_gpu_env()
    env["PYTHONPATH"] = f"{hidden}:{env['PYTHONPATH']}"
    region = device_regions(64)
    with ServerProcess([standard_repo], "--allow-client-shm=true", env=env) as server:
        for client, status in zip(_clients(server), ("400", "StatusCode.INVALID_ARGUMENT"),
                                  strict=True):
            assert _refused(lambda c=client: c.register_cuda_shared_memory(
                "c", region.raw_handle, 0, 64), status) == (
                "failed to register CUDA shared memory region 'c': the server cannot open CUDA "
                "IPC handles without NVIDIA's cuda-python binding (module 'cuda.bindings'); "
                "install it next to the server: pip install cuda-python")
            client.close()


def test_registration_is_off_by_default(standard_repo, device_regions):
    region = device_regions(64)
    with ServerProcess([standard_repo], env=fake_cuda_env()) as server:
        http, grpc_client = _clients(server)
        assert "--allow-client-shm=true" in _refused(
            lambda: http.register_cuda_shared_memory("c", region.raw_handle, 0, 64), "501")
        _refused(lambda: grpc_client.register_cuda_shared_memory("c", region.raw_handle, 0, 64),
                 "StatusCode.UNIMPLEMENTED")
        assert http.get_cuda_shared_memory_status() == []
        assert not mapped(server, region.key)
        http.close()
        grpc_client.close()


# -- inference with tensors in (fake) device memory ----------------------------------------------


@pytest.mark.parametrize("module", [httpclient, grpcclient], ids=["http", "grpc"])
def test_fp32_input_and_output_in_cuda_shared_memory(clients, fake_gpu_server, device_regions,
                                                     module):
    data = np.arange(16, dtype=np.float32).reshape(1, 16) * 2.5
    inp, out = device_regions(64), device_regions(128)
    inp.set(data)
    client = module.InferenceServerClient(
        fake_gpu_server.http_url if module is httpclient else fake_gpu_server.grpc_url)
    client.register_cuda_shared_memory("in", inp.raw_handle, 0, 64)
    client.register_cuda_shared_memory("out", out.raw_handle, 0, 128)
    inputs, outputs = fp32_io(module, data, "in", "out", 64, output_offset=64)
    result = client.infer("identity_fp32", inputs, outputs=outputs)
    assert described_only(result) == {"name": "OUTPUT0", "datatype": "FP32", "shape": [1, 16]}
    np.testing.assert_array_equal(out.get(np.float32, [1, 16], offset=64), data)
    np.testing.assert_array_equal(out.get(np.float32, [1, 16]), np.zeros((1, 16), np.float32))
    # The input is read at request time: new contents, new answer.
    inp.set(data + 1)
    client.infer("identity_fp32", inputs, outputs=outputs)
    np.testing.assert_array_equal(out.get(np.float32, [1, 16], offset=64), data + 1)
    client.close()


def test_cuda_input_system_output_and_response_output(clients, device_regions, regions):
    http, _ = clients
    data = np.linspace(-1, 1, 16, dtype=np.float32).reshape(1, 16)
    inp, out = device_regions(64), regions(64)
    inp.set(data)
    http.register_cuda_shared_memory("in", inp.raw_handle, 0, 64)
    http.register_system_shared_memory("out", out.key, 64)
    inputs, outputs = fp32_io(httpclient, data, "in", "out", 64)
    http.infer("identity_fp32", inputs, outputs=outputs)
    np.testing.assert_array_equal(out.get(np.float32, [1, 16]), data)
    inputs, outputs = fp32_io(httpclient, data, "in", None, 64)
    np.testing.assert_array_equal(
        http.infer("identity_fp32", inputs, outputs=outputs).as_numpy("OUTPUT0"), data)


@pytest.mark.parametrize(("offset", "byte_size", "message"), [
    (64, 64, "Invalid offset for shared memory region: 'c'"),
    (4, 64, "Invalid offset + byte size for shared memory region: 'c'"),
    (0, None, "Invalid offset + byte size for shared memory region: 'c'"),
])
def test_bounds_are_checked_as_for_system_shared_memory(clients, fake_gpu_server,
                                                        device_regions, offset, byte_size,
                                                        message):
    http, _ = clients
    region = device_regions(128)
    http.register_cuda_shared_memory("c", region.raw_handle, 0, 64)  # the first 64 bytes
    reply = raw_infer(fake_gpu_server, [shm_input("c", byte_size, offset)])
    assert (reply.status, reply.error) == (400, message)
    reply = raw_infer(fake_gpu_server, [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 16],
                                         "data": [0.0] * 16}],
                      [shm_output("c", byte_size, offset)])
    assert (reply.status, reply.error) == (400, message)


def test_output_too_small_for_the_result(clients, fake_gpu_server, device_regions):
    http, _ = clients
    region = device_regions(64)
    http.register_cuda_shared_memory("c", region.raw_handle, 0, 64)
    reply = raw_infer(fake_gpu_server, [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 16],
                                         "data": [1.0] * 16}], [shm_output("c", 32)])
    assert (reply.status, reply.error) == (
        500, "shared memory size specified with the request for output 'OUTPUT0' (32 bytes) "
             "should be at least 64 bytes to hold the results")


@pytest.fixture(scope="module")
def gated_gpu_server(tmp_path_factory: pytest.TempPathFactory):
    """A fake-GPU server with `gated`, which holds a request until its gate is opened."""
    repo = tmp_path_factory.mktemp("gated")
    gate = write_gated(repo)
    with ServerProcess([repo], "--allow-client-shm=true", env=fake_cuda_env()) as process:
        yield process, gate


def test_regions_in_use_cannot_be_unregistered_until_answered(gated_gpu_server, device_regions):
    """As for system shared memory (and in Triton): the regions a request in flight names stay
    registered, and mapped, until it is answered; then they unregister at once."""
    server, gate = gated_gpu_server
    http, grpc = _clients(server)
    data = np.arange(16, dtype=np.float32).reshape(1, 16)
    inp, out = device_regions(64), device_regions(64)
    inp.set(data)
    http.register_cuda_shared_memory("in", inp.raw_handle, 0, 64)
    http.register_cuda_shared_memory("out", out.raw_handle, 0, 64)
    pending = infer_in_flight(server.http_url, "gated", data, 64)
    server.wait_pending("gated", 1)
    assert _refused(lambda: http.unregister_cuda_shared_memory("out"), "500") == (
        "Cannot unregister shared memory region 'out', it is currently in use.")
    assert _refused(grpc.unregister_cuda_shared_memory, "StatusCode.INTERNAL") == (
        "Failed to unregister the following cuda shared memory regions: in ,out ,")
    assert mapped(server, inp.key) and mapped(server, out.key)
    gate.write_text("")
    assert described_only(pending.result(60))["shape"] == [1, 16]
    np.testing.assert_array_equal(out.get(np.float32, [1, 16]), data)
    http.unregister_cuda_shared_memory()
    assert http.get_cuda_shared_memory_status() == []
    # The mappings close when the server drops the request (its instance thread returns).
    deadline = time.monotonic() + 10
    while mapped(server, inp.key) or mapped(server, out.key):
        assert time.monotonic() < deadline, "the mappings stayed open after the request ended"
        time.sleep(0.02)
