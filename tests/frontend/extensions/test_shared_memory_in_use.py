"""A system shared-memory region that a request in flight names cannot be unregistered, as in
Triton 2.51 (its qa/L0_shared_memory test_unregister_shm_during_inference): by name it fails
with INTERNAL "Cannot unregister shared memory region '<name>', it is currently in use.", and
unregister-all releases the free regions and fails naming the busy ones. Once the request has
been answered the regions are free again.

The request is held by `gated` (support/gated_model.py) until the test opens its gate, so the
test acts while the request is certainly in flight. The request is sent with tritonclient over
HTTP and over gRPC; the unregister calls are made over both.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from types import ModuleType

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.gated_model import write_gated
from support.server_process import ServerProcess
from support.shared_memory_fixtures import Region, fp32_io

DATA = np.arange(16, dtype=np.float32).reshape(1, 16)
SIZE = DATA.nbytes


@pytest.fixture(scope="module")
def gated_server(tmp_path_factory: pytest.TempPathFactory):
    repo = tmp_path_factory.mktemp("repo")
    gate = write_gated(repo)
    with ServerProcess([repo], "--allow-client-shm=true") as process:
        yield process, gate


@pytest.fixture
def clients(gated_server):
    server, _ = gated_server
    http = httpclient.InferenceServerClient(server.http_url)
    grpc = grpcclient.InferenceServerClient(server.grpc_url)
    yield http, grpc
    http.unregister_system_shared_memory()
    assert http.get_system_shared_memory_status() == []
    http.close()
    grpc.close()


@pytest.fixture
def objects():
    made = [Region(SIZE) for _ in range(3)]
    yield made
    for region in made:
        region.destroy()


def _infer_in_flight(module: ModuleType, url: str) -> Future:
    """One request on regions "in" and "out", sent from its own thread and client."""
    def send():
        client = module.InferenceServerClient(url)
        try:
            inputs, outputs = fp32_io(module, DATA, "in", "out", SIZE)
            return client.infer("gated", inputs, outputs=outputs)
        finally:
            client.close()

    pool = ThreadPoolExecutor(1)
    future = pool.submit(send)
    pool.shutdown(wait=False)
    return future


def _refused(unregister, *args) -> InferenceServerException:
    with pytest.raises(InferenceServerException) as caught:
        unregister(*args)
    return caught.value


def _names(client) -> list[str]:
    status = client.get_system_shared_memory_status()
    if isinstance(status, list):  # http: a list of regions; grpc: a message, regions by name
        return sorted(region["name"] for region in status)
    return sorted(status.regions)


@pytest.mark.parametrize("module", [httpclient, grpcclient], ids=["http", "grpc"])
def test_regions_in_use_cannot_be_unregistered_until_answered(gated_server, clients, objects,
                                                             module):
    server, gate = gated_server
    http, grpc = clients
    inp, out, spare = objects
    inp.set(DATA)
    for name, region in (("in", inp), ("out", out), ("spare", spare)):
        http.register_system_shared_memory(name, region.key, SIZE)
    pending = _infer_in_flight(module, server.http_url if module is httpclient
                               else server.grpc_url)
    server.wait_pending("gated", 1)

    for name in ("in", "out"):  # the input's region and the output's
        expected = f"Cannot unregister shared memory region '{name}', it is currently in use."
        error = _refused(http.unregister_system_shared_memory, name)
        assert error.message() == expected and error.status() == "500"
        error = _refused(grpc.unregister_system_shared_memory, name)
        assert error.message() == expected and error.status() == "StatusCode.INTERNAL"
    # All: the free region goes, the busy ones stay and are named (sorted, as Triton's map).
    busy = "Failed to unregister the following system shared memory regions: in ,out ,"
    assert _refused(http.unregister_system_shared_memory).message() == busy
    assert _names(http) == ["in", "out"]
    assert _refused(grpc.unregister_system_shared_memory).message() == busy
    assert _names(grpc) == ["in", "out"]

    gate.write_text("")  # the model answers
    result = pending.result(60)
    assert result.get_output("OUTPUT0") is not None
    np.testing.assert_array_equal(out.get(np.float32, [1, 16]), DATA)
    # Answered: free at once.
    http.unregister_system_shared_memory("in")
    grpc.unregister_system_shared_memory("out")
    assert _names(http) == []


@pytest.mark.parametrize("module", [httpclient, grpcclient], ids=["http", "grpc"])
def test_a_request_that_fails_to_decode_leaves_its_regions_free(gated_server, clients, objects,
                                                               module):
    """The input's window is taken before the unknown output region fails the request."""
    server, _ = gated_server
    http, _ = clients
    inp = objects[0]
    inp.set(DATA)
    http.register_system_shared_memory("in", inp.key, SIZE)
    client = module.InferenceServerClient(server.http_url if module is httpclient
                                          else server.grpc_url)
    inputs, outputs = fp32_io(module, DATA, "in", "missing", SIZE)
    with pytest.raises(InferenceServerException, match="Unable to find shared memory region"):
        client.infer("gated", inputs, outputs=outputs)
    client.close()
    http.unregister_system_shared_memory("in")
    assert _names(http) == []
