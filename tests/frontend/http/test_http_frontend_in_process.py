"""The HttpFrontend in-process over a stand-in server object: port conflicts and graceful stop.

Also what the frontend refuses on its own (not ready, decoupled models), with no model process
behind it.
"""

from __future__ import annotations

import asyncio
import json
import socket

import pytest

from support.http_infer_requests import f32_input
from support.stand_in_model import StandInModel
from tritium.errors import TritonError
from tritium.frontend.http import HttpFrontend
from tritium.request import InferenceResponse
from tritium.tensor import Tensor

# -- the frontend in-process: ports and graceful stop ---------------------------------------


class StandInServer:
    """Just enough of InferenceServer for the frontend; infer waits until released."""

    def __init__(self) -> None:
        from tritonclient.grpc import model_config_pb2 as mc

        self.config = mc.ModelConfig(name="m", max_batch_size=0)
        self.config.input.add(name="INPUT0", data_type=mc.TYPE_FP32, dims=[-1])
        self.config.output.add(name="OUTPUT0", data_type=mc.TYPE_FP32, dims=[-1])
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.ready = True
        self.tasks: set[asyncio.Task] = set()
        from tritium.shared_memory import SharedMemoryManager
        from tritium.trace_settings import TraceSettings

        self.shared_memory = SharedMemoryManager(enabled=False)
        self.trace_settings = TraceSettings()

    def is_live(self) -> bool:
        return True

    def is_ready(self) -> bool:
        return self.ready

    def model_config(self, name: str, version: str = ""):
        if name != "m":
            raise TritonError.not_found(f"Request for unknown model: '{name}' is not found")
        return self.config

    async def infer(self, request):
        self.entered.set()
        await self.release.wait()
        t = request.inputs["INPUT0"]
        return InferenceResponse(outputs=[Tensor("OUTPUT0", t.datatype, t.shape, t.data)],
                                 model_name="m", model_version="1")

    def resolve(self, name: str, version: str = ""):
        # InferenceServer.resolve: the model, once per request; its response comes later.
        return StandInModel(self.model_config(name, version), self.infer, self.tasks)


async def _http(port: int, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
                 f"Connection: close\r\n\r\n".encode() + body)
    await writer.drain()
    data = await reader.read()
    writer.close()
    head, _, payload = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), payload


def test_start_on_taken_port_raises_oserror():
    async def main() -> None:
        holder = socket.socket()
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        try:
            with pytest.raises(OSError):
                await HttpFrontend(StandInServer(), "127.0.0.1", port).start()
        finally:
            holder.close()

    asyncio.run(main())


def test_start_listens_and_stop_lets_inflight_request_finish():
    async def main() -> None:
        stand_in = StandInServer()
        frontend = HttpFrontend(stand_in, "127.0.0.1", 0)
        await frontend.start()
        port = frontend.port
        assert frontend.description == f"HTTPService at 127.0.0.1:{port}"
        assert await _http(port, "GET", "/v2/health/live") == (200, b"")

        body = json.dumps({"inputs": [f32_input([1, 2], [2])]}).encode()
        inflight = asyncio.create_task(_http(port, "POST", "/v2/models/m/infer", body))
        await stand_in.entered.wait()
        stopping = asyncio.create_task(frontend.stop(grace=30))
        await asyncio.sleep(0)
        stand_in.release.set()
        status, payload = await inflight
        await stopping
        assert status == 200
        assert json.loads(payload)["outputs"][0]["data"] == [1.0, 2.0]
        with pytest.raises(OSError):
            await _http(port, "GET", "/v2/health/live")

    asyncio.run(main())


def test_not_ready_is_400_with_empty_body():
    async def main() -> None:
        stand_in = StandInServer()
        frontend = HttpFrontend(stand_in, "127.0.0.1", 0)
        await frontend.start()
        try:
            assert await _http(frontend.port, "GET", "/v2/health/ready") == (200, b"")
            stand_in.ready = False
            assert await _http(frontend.port, "GET", "/v2/health/ready") == (400, b"")
            assert await _http(frontend.port, "GET", "/v2/health/live") == (200, b"")
        finally:
            await frontend.stop(grace=1)

    asyncio.run(main())


def test_decoupled_model_is_refused():
    async def main() -> None:
        stand_in = StandInServer()
        stand_in.config.model_transaction_policy.decoupled = True
        frontend = HttpFrontend(stand_in, "127.0.0.1", 0)
        await frontend.start()
        try:
            body = json.dumps({"inputs": [f32_input([1], [1])]}).encode()
            status, payload = await _http(frontend.port, "POST", "/v2/models/m/infer", body)
            assert status == 501
            assert json.loads(payload)["error"] == (
                "HTTP end point doesn't support models with decoupled transaction policy"
            )
        finally:
            await frontend.stop(grace=1)

    asyncio.run(main())


def test_stop_after_grace_cancels_stuck_request():
    async def main() -> None:
        stand_in = StandInServer()
        frontend = HttpFrontend(stand_in, "127.0.0.1", 0)
        await frontend.start()
        body = json.dumps({"inputs": [f32_input([1], [1])]}).encode()
        reader, writer = await asyncio.open_connection("127.0.0.1", frontend.port)
        writer.write(b"POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
                     b"\r\n%s" % (len(body), body))
        await stand_in.entered.wait()
        await frontend.stop(grace=0.2)  # returns although the request never finishes
        # ... and the stuck client is not left hanging: it gets a 500, as from an ASGI server
        # cancelling the request's task, and its connection is closed (read() reaches EOF).
        answer = await asyncio.wait_for(reader.read(), 10)
        assert answer.startswith(b"HTTP/1.1 500 Internal Server Error\r\n")
        assert b"\r\nconnection: close\r\n" in answer
        writer.close()
        for task in stand_in.tasks:
            task.cancel()

    asyncio.run(main())


def test_a_fault_in_the_parsers_callbacks_is_a_500_not_the_clients_400(monkeypatch, caplog):
    """A bug of ours while a request is parsed answers 500 and is logged with its traceback
    (it used to read as the client's "Invalid HTTP request received."); a malformed request
    is still the client's 400."""
    from tritium.frontend.http.connection import HttpConnection

    def broken(self, name: bytes, value: bytes) -> None:
        raise KeyError("a bug")

    async def main() -> None:
        frontend = HttpFrontend(StandInServer(), "127.0.0.1", 0)
        await frontend.start()
        try:
            assert (await _http(frontend.port, "GET", "/v2 /x"))[0] == 400
            with monkeypatch.context() as patch:
                patch.setattr(HttpConnection, "on_header", broken)
                assert await _http(frontend.port, "GET", "/v2/health/live") == (
                    500, b"Internal Server Error")
            assert await _http(frontend.port, "GET", "/v2/health/live") == (200, b"")
        finally:
            await frontend.stop(grace=1)

    asyncio.run(main())
    assert "HTTP request handling failed" in caplog.text and "KeyError" in caplog.text
