"""What the shared-memory tests share: a server that allows client shared memory, clients,
client-side regions made with `tritonclient.utils.shared_memory`, and request builders.

Test modules import the fixtures they use from here.
"""

from __future__ import annotations

import itertools
import json
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pbg

from support.raw_http import call
from support.server_process import ServerProcess

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
    """Whether the server process holds the object `key`: mapped (CUDA's IPC stand-in maps it),
    or open (a system region is held open, never mapped)."""
    path = f"/dev/shm{key}"
    proc = Path(f"/proc/{server.process.pid}")
    if path in (proc / "maps").read_text():
        return True
    for fd in (proc / "fd").iterdir():
        try:
            if os.readlink(fd) == path:
                return True
        except OSError:
            continue  # closed while listing
    return False


def fp32_io(module, data: np.ndarray, input_region: str, output_region: str | None,
            byte_size: int, output_offset: int = 0, input_offset: int = 0):
    inp = module.InferInput("INPUT0", list(data.shape), "FP32")
    inp.set_shared_memory(input_region, byte_size, offset=input_offset)
    out = module.InferRequestedOutput("OUTPUT0")
    if output_region is not None:
        out.set_shared_memory(output_region, byte_size, offset=output_offset)
    return [inp], [out]


def infer_in_flight(url: str, model: str, data: np.ndarray, byte_size: int) -> Future:
    """Start an HTTP request on regions "in" and "out" from its own thread and client, and
    return its future. Not `async_infer`: tritonclient's http client sends from a greenlet
    that runs only while the calling thread yields to gevent, which a test waiting on the
    server (plain sleeps) never does: under load the request was never sent."""
    def send():
        client = httpclient.InferenceServerClient(url, network_timeout=60)
        try:
            inputs, outputs = fp32_io(httpclient, data, "in", "out", byte_size)
            return client.infer(model, inputs, outputs=outputs)
        finally:
            client.close()

    pool = ThreadPoolExecutor(1)
    future = pool.submit(send)
    pool.shutdown(wait=False)  # the thread ends with the request
    return future


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


def stub(server: ServerProcess):
    return pbg.GRPCInferenceServiceStub(grpc.insecure_channel(server.grpc_url))


def grpc_request(inputs: list, outputs: list) -> pb.ModelInferRequest:
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
