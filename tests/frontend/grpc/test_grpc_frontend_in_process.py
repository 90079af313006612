"""A GrpcFrontend in-process over a stand-in server object, for what the standard repository
cannot show: every typed-contents kind and datatype, readiness changes, port conflicts,
graceful stop, and finished calls freed by reference counting alone.
"""

from __future__ import annotations

import asyncio
import gc
import socket
from typing import Any

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.grpc import model_config_pb2
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pbg

from support.grpc_fixtures import F4, NOT_SERVING, SERVING, infer_request, output_array, tensor
from support.stand_in_model import StandInModel
from tritium.errors import TritonError
from tritium.frontend.grpc import GrpcFrontend
from tritium.request import InferenceResponse
from tritium.tensor import Tensor

# -- in-process: a GrpcFrontend over a stand-in server -----------------------------------------


class EchoServer:
    """Stands in for InferenceServer: OUTPUTn = INPUTn of any datatype, no validation."""

    def __init__(self) -> None:
        self.ready = True
        self.release: asyncio.Event | None = None
        self.started = 0
        self.requests: list[Any] = []
        self.tasks: set[asyncio.Task] = set()
        from tritium.shared_memory import SharedMemoryManager
        from tritium.trace_settings import TraceSettings

        self.shared_memory = SharedMemoryManager(enabled=False)
        self.trace_settings = TraceSettings()

    def is_live(self) -> bool:
        return True

    def is_ready(self) -> bool:
        return self.ready

    def metadata(self) -> dict[str, Any]:
        return {"name": "echo", "version": "0", "extensions": []}

    def model_ready(self, name: str, version: str = "") -> bool:
        return name == "echo"

    def model_config(self, name: str, version: str = "") -> Any:
        if name not in ("echo", "echo_decoupled"):
            raise TritonError.not_found(f"Request for unknown model: '{name}' is not found")
        config = model_config_pb2.ModelConfig(name=name)
        config.model_transaction_policy.decoupled = name == "echo_decoupled"
        return config

    def model_metadata(self, name: str, version: str = "") -> dict[str, Any]:
        self.model_config(name, version)
        return {"name": name, "versions": ["1"], "platform": "echo", "inputs": [], "outputs": []}

    def resolve(self, name: str, version: str = "") -> StandInModel:
        # InferenceServer.resolve: the model, once per request; its response comes later.
        return StandInModel(self.model_config(name, version), self.infer, self.tasks)

    async def infer(self, request: Any) -> InferenceResponse:
        self.model_config(request.model_name)
        self.requests.append(request)
        self.started += 1
        if self.release is not None:
            await self.release.wait()
        outputs = [Tensor(n.replace("INPUT", "OUTPUT"), t.datatype, t.shape, t.data)
                   for n, t in request.inputs.items()]
        return InferenceResponse(outputs=outputs, model_name=request.model_name,
                                 model_version="1", id=request.id)


def run_with_frontend(test, server: EchoServer | None = None) -> None:
    """Start a GrpcFrontend on a free port, run `await test(frontend, stub, server)`, stop."""
    server = server or EchoServer()

    async def main() -> None:
        frontend = GrpcFrontend(server, "127.0.0.1", 0)
        await frontend.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{frontend.port}") as ch:
                await test(frontend, pbg.GRPCInferenceServiceStub(ch), server, ch)
        finally:
            await frontend.stop(0)

    try:
        import uvloop  # the server runs on uvloop; grpc.aio must work there
    except ImportError:
        asyncio.run(main())
    else:
        uvloop.run(main())


TYPED_CONTENTS = [
    ("BOOL", "bool_contents", [True, False, True], np.bool_),
    ("INT8", "int_contents", [-128, 0, 127], np.int8),
    ("INT16", "int_contents", [-32768, 5, 32767], np.int16),
    ("INT32", "int_contents", [-(2**31), 0, 2**31 - 1], np.int32),
    ("INT64", "int64_contents", [-(2**63), 0, 2**63 - 1], np.int64),
    ("UINT8", "uint_contents", [0, 7, 255], np.uint8),
    ("UINT16", "uint_contents", [0, 7, 65535], np.uint16),
    ("UINT32", "uint_contents", [0, 7, 2**32 - 1], np.uint32),
    ("UINT64", "uint64_contents", [0, 7, 2**64 - 1], np.uint64),
    ("FP32", "fp32_contents", [0.5, -1.25, 3e38], np.float32),
    ("FP64", "fp64_contents", [0.5, -1.25, 1e300], np.float64),
]


def test_every_typed_contents_kind_round_trips_as_raw_output():
    async def test(frontend, stub, server, ch) -> None:
        for datatype, field, values, dtype in TYPED_CONTENTS:
            response = await stub.ModelInfer(infer_request(
                "echo", [tensor("INPUT0", datatype, [1, 3], **{field: values})]
            ))
            out = output_array(response, "OUTPUT0")
            assert response.outputs[0].datatype == datatype
            assert out.dtype == dtype, datatype
            np.testing.assert_array_equal(out, np.array([values], dtype=dtype))
            decoded = server.requests[-1].inputs["INPUT0"].data
            assert decoded.dtype == dtype and decoded.shape == (1, 3)

    run_with_frontend(test)


@pytest.mark.parametrize("datatype", ["BOOL", "INT8", "UINT16", "INT64", "FP16", "BF16", "FP64"])
def test_raw_contents_of_every_fixed_size_datatype(datatype):
    dtype = {"BF16": np.uint16}.get(datatype) or grpcclient.triton_to_np_dtype(datatype)
    data = (np.arange(6) % 2 if datatype == "BOOL" else np.arange(6)).astype(dtype).reshape(2, 3)

    async def test(frontend, stub, server, ch) -> None:
        response = await stub.ModelInfer(infer_request(
            "echo", [tensor("INPUT0", datatype, [2, 3])], [data.tobytes()], id="r"
        ))
        assert response.id == "r"
        assert list(response.outputs[0].shape) == [2, 3]
        np.testing.assert_array_equal(output_array(response, "OUTPUT0"), data)

    run_with_frontend(test)


def test_zero_sized_tensor():
    async def test(frontend, stub, server, ch) -> None:
        response = await stub.ModelInfer(infer_request(
            "echo", [tensor("INPUT0", "FP32", [0, 4])], [b""]
        ))
        assert list(response.outputs[0].shape) == [0, 4]
        assert response.raw_output_contents[0] == b""

    run_with_frontend(test)


def test_request_parameters_reach_the_request():
    async def test(frontend, stub, server, ch) -> None:
        await stub.ModelInfer(infer_request(
            "echo", [tensor("INPUT0", "FP32", [1, 4])], [F4.tobytes()],
            params={"sequence_id": 42, "sequence_start": True, "sequence_end": False,
                    "priority": 2, "timeout": 1500, "custom": "v", "flag": True, "n": -3},
        ))
        request = server.requests[-1]
        assert request.correlation_id == 42
        assert request.flags == 1  # SEQUENCE_START
        assert request.priority == 2
        assert request.timeout_us == 1500
        assert request.parameters == {"custom": "v", "flag": True, "n": -3}
        await stub.ModelInfer(infer_request(
            "echo", [tensor("INPUT0", "FP32", [1, 4])], [F4.tobytes()],
            params={"sequence_id": "corr-7", "sequence_end": True},
        ))
        assert server.requests[-1].correlation_id == "corr-7"
        assert server.requests[-1].flags == 2  # SEQUENCE_END

    run_with_frontend(test)


def test_model_infer_refuses_decoupled_models():
    async def test(frontend, stub, server, ch) -> None:
        with pytest.raises(grpc.RpcError) as info:
            await stub.ModelInfer(infer_request(
                "echo_decoupled", [tensor("INPUT0", "FP32", [1, 4])], [F4.tobytes()]
            ))
        assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED
        assert info.value.details() == (
            "ModelInfer RPC doesn't support models with decoupled transaction policy"
        )
        assert not server.requests

    run_with_frontend(test)


def test_health_follows_server_readiness():
    async def test(frontend, stub, server, ch) -> None:
        check = ch.unary_unary("/grpc.health.v1.Health/Check")
        assert await check(b"") == SERVING
        assert (await stub.ServerReady(pb.ServerReadyRequest())).ready
        server.ready = False
        assert await check(b"") == NOT_SERVING
        assert not (await stub.ServerReady(pb.ServerReadyRequest())).ready

    run_with_frontend(test)


def test_start_raises_oserror_when_the_port_is_taken():
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]

    async def main() -> None:
        frontend = GrpcFrontend(EchoServer(), "127.0.0.1", port)
        with pytest.raises(OSError, match=str(port)):
            await frontend.start()
        await frontend.stop(0)  # harmless after a failed start

    try:
        asyncio.run(main())
    finally:
        taken.close()


def test_description_names_the_bound_address():
    async def test(frontend, stub, server, ch) -> None:
        assert frontend.description == f"GRPCInferenceService at 127.0.0.1:{frontend.port}"
        assert frontend.port > 0

    run_with_frontend(test)


def test_stop_lets_in_flight_requests_finish():
    server = EchoServer()

    async def main() -> None:
        server.release = asyncio.Event()
        frontend = GrpcFrontend(server, "127.0.0.1", 0)
        await frontend.start()
        async with grpc.aio.insecure_channel(f"127.0.0.1:{frontend.port}") as ch:
            stub = pbg.GRPCInferenceServiceStub(ch)
            call = asyncio.ensure_future(stub.ModelInfer(infer_request(
                "echo", [tensor("INPUT0", "FP32", [1, 4])], [F4.tobytes()]
            )))
            while server.started == 0:
                await asyncio.sleep(0.01)
            stopping = asyncio.ensure_future(frontend.stop(30.0))
            await asyncio.sleep(0.1)
            assert not stopping.done()  # waiting for the request in flight
            server.release.set()
            response = await call
            np.testing.assert_array_equal(output_array(response, "OUTPUT0"), F4)
            await stopping
            with pytest.raises(grpc.RpcError):
                await stub.ServerLive(pb.ServerLiveRequest(), timeout=2)

    asyncio.run(main())


class _Forgetful(EchoServer):
    """Keeps no request (EchoServer keeps each, and with it what answered it)."""

    async def infer(self, request: Any) -> InferenceResponse:
        response = await super().infer(request)
        self.requests.clear()
        return response


def test_finished_calls_are_freed_without_the_garbage_collector():
    # A call left in a reference cycle (its stream and it) stays until the collector runs,
    # and those collections were the tail of the latency; a finished call must be freed by
    # reference counting alone.
    from tritium.frontend.grpc.call import Call

    def calls_alive() -> int:
        return sum(1 for o in gc.get_objects() if type(o) is Call)

    async def test(frontend, stub, server, ch) -> None:
        await stub.ServerLive(pb.ServerLiveRequest())  # the connection's own objects settle
        before = calls_alive()
        gc.disable()
        try:
            for _ in range(20):
                await stub.ModelInfer(infer_request(
                    "echo", [tensor("INPUT0", "FP32", [1, 2])], [b"\0" * 8]))
                await stub.ServerLive(pb.ServerLiveRequest())
            await asyncio.sleep(0.05)  # the last calls' tasks end
            assert calls_alive() <= before
        finally:
            gc.enable()

    run_with_frontend(test, _Forgetful())
