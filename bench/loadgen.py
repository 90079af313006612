"""A small closed-loop load generator: N concurrent workers, fixed duration, latency percentiles.

HTTP workers speak HTTP/1.1 keep-alive on raw asyncio streams with one pre-built binary-tensor
request, and gRPC workers send one pre-built ModelInferRequest through grpc.aio, so the client
costs little next to the server it measures (both share this machine's cores).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass

import grpc
import numpy as np
from tritonclient.grpc import service_pb2, service_pb2_grpc


@dataclass
class Result:
    protocol: str
    concurrency: int
    requests: int
    errors: int
    seconds: float
    latencies_us: list[float]

    @property
    def throughput(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        if not self.latencies_us:
            return float("nan")
        return float(np.percentile(self.latencies_us, q))


Inputs = list[tuple[str, np.ndarray]]


def _datatype(array: np.ndarray) -> str:
    return {np.float32: "FP32", np.int32: "INT32", np.int64: "INT64"}[array.dtype.type]


def http_request_bytes(host: str, model: str, inputs: Inputs, outputs: list[str]) -> bytes:
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": name,
                    "datatype": _datatype(data),
                    "shape": list(data.shape),
                    "parameters": {"binary_data_size": data.nbytes},
                }
                for name, data in inputs
            ],
            "outputs": [{"name": name, "parameters": {"binary_data": True}} for name in outputs],
        }
    ).encode()
    body = header + b"".join(data.tobytes() for _, data in inputs)
    head = (
        f"POST /v2/models/{model}/infer HTTP/1.1\r\nHost: {host}\r\n"
        f"Content-Type: application/octet-stream\r\n"
        f"Inference-Header-Content-Length: {len(header)}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    return head + body


def grpc_request(model: str, inputs: Inputs, outputs: list[str]) -> service_pb2.ModelInferRequest:
    request = service_pb2.ModelInferRequest(model_name=model)
    for name, data in inputs:
        request.inputs.add(name=name, datatype=_datatype(data), shape=list(data.shape))
        request.raw_input_contents.append(data.tobytes())
    for name in outputs:
        request.outputs.add(name=name)
    return request


async def _http_worker(host: str, port: int, payload: bytes, stop: float, out: list, errors: list):
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while time.perf_counter() < stop:
            start = time.perf_counter()
            writer.write(payload)
            status_line = await reader.readline()
            length = 0
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b""):
                    break
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            if b" 200 " not in status_line:
                errors.append(status_line)
                continue
            out.append((time.perf_counter() - start) * 1e6)
    finally:
        writer.close()


async def _grpc_worker(stub, request, stop: float, out: list, errors: list) -> None:
    while time.perf_counter() < stop:
        start = time.perf_counter()
        try:
            await stub.ModelInfer(request)
        except grpc.aio.AioRpcError as exc:
            errors.append(exc.code())
            continue
        out.append((time.perf_counter() - start) * 1e6)


async def run_load(
    protocol: str, host: str, port: int, model: str, concurrency: int, seconds: float,
    inputs: Inputs, outputs: list[str], warmup: float = 1.0,
) -> Result:
    """Closed loop: `concurrency` workers each send the same request back to back."""
    channel = None
    if protocol == "http":
        payload = http_request_bytes(f"{host}:{port}", model, inputs, outputs)

        def worker(stop: float, out: list, errors: list):
            return _http_worker(host, port, payload, stop, out, errors)
    else:
        channel = grpc.aio.insecure_channel(f"{host}:{port}")
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        request = grpc_request(model, inputs, outputs)

        def worker(stop: float, out: list, errors: list):
            return _grpc_worker(stub, request, stop, out, errors)

    try:
        sink: list = []
        await asyncio.gather(
            *(worker(time.perf_counter() + warmup, sink, []) for _ in range(concurrency))
        )
        latencies: list[float] = []
        errors: list = []
        begin = time.perf_counter()
        await asyncio.gather(
            *(worker(begin + seconds, latencies, errors) for _ in range(concurrency))
        )
        elapsed = time.perf_counter() - begin
    finally:
        if channel is not None:
            await channel.close()
    return Result(protocol, concurrency, len(latencies), len(errors), elapsed, latencies)
