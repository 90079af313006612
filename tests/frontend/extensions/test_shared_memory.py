"""The shared-memory extensions' registration calls, driven by tritonclient (http and grpc) and
raw HTTP: register, status, unregister, the keys that are refused, and the default where
registration is off (CUDA shared memory: test_cuda_shared_memory.py).

Expected texts are what Triton 2.51 answers for the same calls (compared with the reference
server); where Tritium deliberately differs (reserved keys, registration off unless
--allow-client-shm=true, two names on one key) the test says so. After every test the server
must still serve and hold no region.
"""

from __future__ import annotations

import base64
import json
import os

import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm
from tritonclient.utils import InferenceServerException

from support.raw_http import call  # noqa: E402
from support.shared_memory_fixtures import (
    Region,
    mapped,
    raw_infer,
    shm_input,
)

# The fixtures (shm_server, http, grpc_client, regions) come from there too.
pytest_plugins = ["support.shared_memory_fixtures"]


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


# What tritonclient's cuda_shared_memory.get_raw_handle gives: a base64 cudaIpcMemHandle_t.
_HANDLE = base64.b64encode(b"\x01" * 64)


def test_metadata_lists_the_extensions_when_enabled(http):
    # Exactly what Triton 2.51 lists.
    assert http.get_server_metadata()["extensions"] == [
        "classification", "sequence", "model_repository", "model_repository(unload_dependents)",
        "schedule_policy", "model_configuration", "system_shared_memory", "cuda_shared_memory",
        "binary_tensor_data", "parameters", "statistics", "trace", "logging"]


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
