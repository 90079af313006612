"""A client truncates its system shared-memory object after registering it, then names it in a
request: that request fails with Triton's out-of-bounds message and the server keeps serving
(Triton 2.51, and Tritium before, died with SIGBUS touching the mapping past the object's end).
Its own server, so that a crash cannot take the other shared-memory tests with it."""

from __future__ import annotations

import os

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.shared_memory_fixtures import fp32_io, raw_infer, shm_input, shm_output
from tritium.errors import TritonError
from tritium.shared_memory import SHM_DIRECTORY, ObjectFile, SharedMemoryManager

pytest_plugins = ["support.shared_memory_fixtures"]

_TRUNCATED = ("Invalid offset + byte size for shared memory region: '{}' (its object was "
              "truncated after registration; restore its size or register it again)")
_DATA = np.arange(16, dtype=np.float32).reshape(1, 16)


def _truncate(key: str, size: int) -> None:
    os.truncate(f"{SHM_DIRECTORY}{key}", size)


def test_truncated_input_fails_the_request_over_http(shm_server, http, regions):
    region = regions(64)
    region.set(_DATA)
    http.register_system_shared_memory("in", region.key, 64)
    _truncate(region.key, 0)
    reply = raw_infer(shm_server, [shm_input("in", 64)])
    assert (reply.status, reply.error) == (400, _TRUNCATED.format("in"))
    # Given its size back, the same registration serves again.
    _truncate(region.key, 64)
    region.set(_DATA)
    inputs, outputs = fp32_io(httpclient, _DATA, "in", None, 64)
    np.testing.assert_array_equal(
        http.infer("identity_fp32", inputs, outputs=outputs).as_numpy("OUTPUT0"), _DATA)


def test_truncated_input_fails_the_request_over_grpc(shm_server, http, grpc_client, regions):
    region = regions(8192)
    http.register_system_shared_memory("in", region.key, 4096, offset=4096)
    _truncate(region.key, 4096 + 32)  # half the tensor's bytes are left
    inputs, _ = fp32_io(grpcclient, _DATA, "in", None, 64)
    with pytest.raises(InferenceServerException) as info:
        grpc_client.infer("identity_fp32", inputs)
    assert info.value.status() == "StatusCode.INVALID_ARGUMENT"
    assert info.value.message() == _TRUNCATED.format("in")


def test_truncated_output_fails_the_request(shm_server, http, regions):
    region = regions(64)
    http.register_system_shared_memory("out", region.key, 64)
    _truncate(region.key, 16)
    body = [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 16],
             "data": _DATA.ravel().tolist()}]
    reply = raw_infer(shm_server, body, [shm_output("out", 64)])
    assert (reply.status, reply.error) == (400, _TRUNCATED.format("out"))
    assert os.stat(f"{SHM_DIRECTORY}{region.key}").st_size == 16  # nothing written
    assert http.is_server_live()


# -- the copy itself, when a truncate races the size check ---------------------------------------


@pytest.fixture
def manager(regions):
    manager = SharedMemoryManager(enabled=True)
    yield manager
    manager.close()


def test_a_truncate_after_the_size_check_costs_the_read_only(manager, regions, monkeypatch):
    region = regions(4096)
    manager.register_system("r", region.key, 0, 4096)
    window = manager.window("r", 0, 4096)
    _truncate(region.key, 100)
    # The object shrinks between the check and the copy: the check still saw the old size.
    monkeypatch.setattr(ObjectFile, "size", lambda self: 4096)
    with pytest.raises(TritonError) as info:
        window.read()
    assert str(info.value) == _TRUNCATED.format("r")


def test_a_window_outlives_its_unregistration(manager, regions):
    """A request's window makes its region in use (unregister refused, as in Triton) until the
    request lets go of it; a window still held after that keeps the object open."""
    region = regions(64)
    region.set(_DATA)
    manager.register_system("r", region.key, 0, 64)
    window = manager.window("r", 0, 64)
    with pytest.raises(TritonError, match="^Cannot unregister shared memory region 'r', it is "
                                          "currently in use.$"):
        manager.unregister_system("r")
    window.let_go()
    manager.unregister_system("r")
    assert manager.system_status() == []
    np.testing.assert_array_equal(np.frombuffer(window.read(), np.float32), _DATA.ravel())


def test_a_dropped_window_ends_its_use(manager, regions):
    """A request that fails before it is answered drops its windows: the region is free."""
    region = regions(64)
    manager.register_system("r", region.key, 0, 64)
    window = manager.window("r", 0, 64)
    del window
    manager.unregister_system()
    assert manager.system_status() == []
