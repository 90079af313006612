"""A decoupled Python-backend model over ModelStreamInfer: errors mid-stream keep the ids and the
stream, and the model sees, through `request.is_cancelled()`, a client that cancels the stream or
vanishes (gen_stream notes each request it finds cancelled).
What Triton sends was checked against Triton 2.51 (tools/reference-triton.sh).
"""

from __future__ import annotations

import asyncio
import queue
import time
from typing import Any

import grpc
import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as aioclient
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pbg

from support.grpc_stream_fixtures import (
    FINAL,
    Collector,
    client,  # noqa: F401
    int32_input,
    stream_server,  # noqa: F401
    wait_until_idle,
)
from support.server_process import ServerProcess

# -- a decoupled python model: errors, ids, cancellation seen by request.is_cancelled() ---------


def gen_inputs(count: int, delay_ms: int = 0, fail_at: int = -1) -> list[grpcclient.InferInput]:
    text = grpcclient.InferInput("text_input", [1], "BYTES")
    text.set_data_from_numpy(np.array([b"t"], dtype=np.object_))
    return [text, int32_input("count", [count]), int32_input("delay_ms", [delay_ms]),
            int32_input("fail_at", [fail_at])]


def gen_message(id: str, count: int, delay_ms: int = 0, fail_at: int = -1
                ) -> pb.ModelInferRequest:
    """A raw gen_stream request asking for the empty final response."""
    request = pb.ModelInferRequest(model_name="gen_stream", id=id)
    request.parameters["triton_enable_empty_final_response"].bool_param = True
    request.inputs.add(name="text_input", datatype="BYTES", shape=[1])
    request.raw_input_contents.append(b"\x01\x00\x00\x00t")
    for name, value in (("count", count), ("delay_ms", delay_ms), ("fail_at", fail_at)):
        request.inputs.add(name=name, datatype="INT32", shape=[1])
        request.raw_input_contents.append(np.array([value], np.int32).tobytes())
    return request


def seen_cancelled(server: ServerProcess) -> list[str]:
    log = server.repo / "gen_stream" / "cancelled.txt"
    return log.read_text().split() if log.exists() else []


def wait_until_cancelled(server: ServerProcess, *ids: str, timeout: float = 10.0) -> None:
    """The model saw each request cancelled (it polls request.is_cancelled() between
    responses) and stopped early; without that each would run for ~10 s."""
    deadline = time.monotonic() + timeout
    while not set(ids) <= set(seen_cancelled(server)):
        assert time.monotonic() < deadline, f"model never saw {ids} cancelled"
        time.sleep(0.05)
    wait_until_idle(server, "gen_stream")


def test_python_model_error_mid_stream_keeps_ids_and_the_stream(stream_server):
    """As Triton 2.51 sends them: every message of the request carries its id; the error one
    has error_message, the model name and no outputs; the stream serves the next request."""
    with grpc.insecure_channel(stream_server.grpc_url) as channel:
        stub = pbg.GRPCInferenceServiceStub(channel)
        got = list(stub.ModelStreamInfer(iter([gen_message("pe", 3, fail_at=1)])))
        assert [(m.error_message, m.infer_response.id, m.infer_response.model_version,
                 m.infer_response.parameters[FINAL].bool_param,
                 [o.name for o in m.infer_response.outputs]) for m in got] == [
            ("", "pe", "1", False, ["text_output", "index"]),
            ("failed at 1", "pe", "", False, []),
            ("", "pe", "1", False, ["text_output", "index"]),
            ("", "pe", "", True, []),
        ]
        assert all(m.infer_response.model_name == "gen_stream" for m in got)
        again = list(stub.ModelStreamInfer(iter([gen_message("ok", 1)])))
        assert [m.infer_response.id for m in again] == ["ok", "ok"]


def test_python_model_sees_the_client_cancel_the_stream(stream_server, client):
    got = Collector()
    client.start_stream(callback=got)
    for request_id in ("cancel-1", "cancel-2"):
        client.async_stream_infer("gen_stream", gen_inputs(100, delay_ms=100),
                                  request_id=request_id)
    got.wait_for(lambda items: {r.get_response().id for r, _ in items if r} ==
                 {"cancel-1", "cancel-2"})
    client.stop_stream(cancel_requests=True)
    wait_until_cancelled(stream_server, "cancel-1", "cancel-2")

    again = Collector()
    client.start_stream(callback=again)
    client.async_stream_infer("gen_stream", gen_inputs(2), request_id="after")
    client.stop_stream()
    assert [r.get_response().id for r, _ in again.items] == ["after", "after"]
    assert [int(r.as_numpy("index")[0]) for r, _ in again.items] == [0, 1]


def test_python_model_sees_the_client_vanish(stream_server):
    channel = grpc.insecure_channel(stream_server.grpc_url)
    stub = pbg.GRPCInferenceServiceStub(channel)
    hold: queue.Queue[Any] = queue.Queue()

    def requests():
        yield gen_message("vanish", 100, delay_ms=100)
        hold.get()  # never half-closes

    call = stub.ModelStreamInfer(requests())
    assert next(call).infer_response.id == "vanish"
    channel.close()
    hold.put(None)
    wait_until_cancelled(stream_server, "vanish")


def test_python_model_sees_an_aio_stream_cancelled(stream_server):
    async def main() -> None:
        async with aioclient.InferenceServerClient(stream_server.grpc_url) as c:
            stop = asyncio.Event()

            async def requests():
                yield {"model_name": "gen_stream", "request_id": "aio-cancel",
                       "inputs": gen_inputs(100, delay_ms=100)}
                await stop.wait()

            stream = c.stream_infer(requests())
            result, error = await stream.__anext__()
            assert error is None and result.get_response().id == "aio-cancel"
            stream.cancel()
            stop.set()

    asyncio.run(main())
    wait_until_cancelled(stream_server, "aio-cancel")
