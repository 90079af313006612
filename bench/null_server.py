"""A server that does no work: Tritium's HTTP and gRPC transports answering every request with
one canned inference response (output `logits`, FP32 [1, 16]).

Its time per request at concurrency 1 is the floor of the measurement itself: the load
generator, loopback TCP and the wake-ups on both sides. `onnx_bench` subtracts it to show what
the server's own work costs.

    python null_server.py HTTP_PORT GRPC_PORT
"""

from __future__ import annotations

import asyncio
import json
import sys

import grpc
import numpy as np
from tritonclient.grpc import service_pb2 as pb

from tritium.frontend.grpc.server import GrpcServer
from tritium.frontend.http.endpoint import HttpEndpoint

OUTPUT = np.zeros((1, 16), dtype=np.float32)
HTTP_BODY = json.dumps({
    "model_name": "mlp", "model_version": "1",
    "outputs": [{"name": "logits", "datatype": "FP32", "shape": [1, 16],
                 "data": OUTPUT.ravel().tolist()}],
}).encode()
HTTP_HEADERS = b"content-length: %d\r\ncontent-type: application/json\r\n" % len(HTTP_BODY)


def grpc_answer() -> bytes:
    response = pb.ModelInferResponse(model_name="mlp", model_version="1")
    response.outputs.add(name="logits", datatype="FP32", shape=[1, 16])
    response.raw_output_contents.append(OUTPUT.tobytes())
    return response.SerializeToString()


async def serve(http_port: int, grpc_port: int) -> None:
    answer = grpc_answer()

    async def model_infer(request: bytes, context: object) -> bytes:
        return answer

    http = HttpEndpoint(lambda conn, request: conn.respond(200, HTTP_HEADERS, HTTP_BODY),
                        "127.0.0.1", http_port, "HTTPService")
    await http.start()
    rpc = grpc.unary_unary_rpc_method_handler(model_infer)
    await GrpcServer({"/inference.GRPCInferenceService/ModelInfer": rpc}).start(
        "127.0.0.1", grpc_port)
    await asyncio.Event().wait()


if __name__ == "__main__":
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # pragma: no cover - uvloop is a dependency except on Windows
        pass
    asyncio.run(serve(int(sys.argv[1]), int(sys.argv[2])))
