"""Closed-loop load for one benchmark cell, driven by C load generators so the client outruns
the server it measures (each gets one core).

- HTTP: `wrk`, one thread with `concurrency` keep-alive connections, each POSTing one pre-built
  binary-tensor request back to back (protocol "http-json": tensors as JSON `data`, the
  outputs asked for as JSON too, as a client without the binary extension sends them). Its
  Lua script sets method, headers and body and reports request count, errors and latency
  percentiles (microseconds) from wrk's `done` hook.
- gRPC: `h2load`, unary ModelInfer over one HTTP/2 connection carrying `concurrency` concurrent
  streams (`-c 1 -m N`), the way one grpc channel multiplexes calls. Per-request latencies come
  from its --log-file.

Each timed run follows a separate warm-up run of the same tool. Neither tool looks into
responses, so before that one request goes through Python and its outputs are checked. During
the run wrk counts non-2xx responses and socket errors, h2load's log counts non-200 statuses and
broken streams, and since a gRPC error is HTTP 200 with no message, only grpc-status in the
trailers, every response carrying no message also counts: h2load's received DATA bytes must
cover one checked-size message per succeeded request.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc
import numpy as np
from tritonclient.grpc import service_pb2, service_pb2_grpc

TOOLS = ("wrk", "h2load")


@dataclass
class Result:
    protocol: str
    concurrency: int
    requests: int  # successful ones
    errors: int
    seconds: float
    p50_us: float
    p99_us: float
    # Server CPU (its process and its children) per successful request, when measured.
    cpu_us: float = float("nan")

    @property
    def throughput(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


Inputs = list[tuple[str, np.ndarray]]


def missing_tools() -> list[str]:
    return [tool for tool in TOOLS if shutil.which(tool) is None]


def _datatype(array: np.ndarray) -> str:
    return {np.float32: "FP32", np.int32: "INT32", np.int64: "INT64"}[array.dtype.type]


def http_request(inputs: Inputs, outputs: list[str], json_data: bool = False
                 ) -> tuple[dict[str, str], bytes]:
    """Headers and body of a binary-tensor infer request (JSON header, then raw tensors), or
    with `json_data` one whose tensors are JSON `data`."""
    if json_data:
        document = {
            "inputs": [{"name": name, "datatype": _datatype(data), "shape": list(data.shape),
                        "data": data.reshape(-1).tolist()} for name, data in inputs],
            "outputs": [{"name": name, "parameters": {"binary_data": False}}
                        for name in outputs],
        }
        return {"Content-Type": "application/json"}, json.dumps(document).encode()
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
    headers = {"Content-Type": "application/octet-stream",
               "Inference-Header-Content-Length": str(len(header))}
    return headers, header + b"".join(data.tobytes() for _, data in inputs)


def grpc_request(model: str, inputs: Inputs, outputs: list[str]) -> service_pb2.ModelInferRequest:
    request = service_pb2.ModelInferRequest(model_name=model)
    for name, data in inputs:
        request.inputs.add(name=name, datatype=_datatype(data), shape=list(data.shape))
        request.raw_input_contents.append(data.tobytes())
    for name in outputs:
        request.outputs.add(name=name)
    return request


def _check_outputs(protocol: str, model: str, names: list[str], outputs: list[str]) -> None:
    if sorted(names) != sorted(outputs):
        raise RuntimeError(f"{model} over {protocol} returned outputs {names}, asked {outputs}")


def check_http(host: str, port: int, model: str, headers: dict[str, str], body: bytes,
               outputs: list[str]) -> None:
    connection = http.client.HTTPConnection(host, port, timeout=30)
    try:
        connection.request("POST", f"/v2/models/{model}/infer", body, headers)
        response = connection.getresponse()
        data = response.read()
    finally:
        connection.close()
    if response.status != 200:
        raise RuntimeError(f"{model} over HTTP answered {response.status}: {data[:500]!r}")
    length = int(response.getheader("Inference-Header-Content-Length") or len(data))
    names = [output["name"] for output in json.loads(data[:length])["outputs"]]
    _check_outputs("HTTP", model, names, outputs)


def check_grpc(host: str, port: int, request: service_pb2.ModelInferRequest,
               outputs: list[str]) -> int:
    """Send `request` once; return the size of its response as a gRPC message on the wire."""
    with grpc.insecure_channel(f"{host}:{port}") as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        response = stub.ModelInfer(request, timeout=30)
    _check_outputs("gRPC", request.model_name, [o.name for o in response.outputs], outputs)
    return 5 + response.ByteSize()


def _run(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {done.returncode}:\n"
                           f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done.stdout


def _lua_string(data: bytes) -> str:
    return '"' + "".join(f"\\{byte:03d}" for byte in data) + '"'


def _wrk_script(headers: dict[str, str], body: bytes) -> str:
    lines = ['wrk.method = "POST"', f"wrk.body = {_lua_string(body)}"]
    lines += [f"wrk.headers[{_lua_string(k.encode())}] = {_lua_string(v.encode())}"
              for k, v in headers.items()]
    lines += [
        "function done(summary, latency, requests)",
        "  local e = summary.errors",
        '  io.write(string.format("wrk-result %d %d %d %d %.1f %.1f\\n",',
        "    summary.requests, summary.duration, e.status,",
        "    e.connect + e.read + e.write + e.timeout,",
        "    latency:percentile(50), latency:percentile(99)))",
        "end",
    ]
    return "\n".join(lines) + "\n"


def _http_load(host: str, port: int, model: str, concurrency: int, seconds: int,
               inputs: Inputs, outputs: list[str], warmup: int, prefix: list[str],
               protocol: str) -> Result:
    headers, body = http_request(inputs, outputs, json_data=protocol == "http-json")
    check_http(host, port, model, headers, body, outputs)
    url = f"http://{host}:{port}/v2/models/{model}/infer"
    with tempfile.TemporaryDirectory(prefix="bench-wrk-") as tmp:
        script = Path(tmp) / "infer.lua"
        script.write_text(_wrk_script(headers, body))
        command = [*prefix, "wrk", "-t1", f"-c{concurrency}", "-s", str(script)]
        if warmup:
            _run([*command, f"-d{warmup}s", url])
        out = _run([*command, f"-d{seconds}s", url])
    line = next(line for line in out.splitlines() if line.startswith("wrk-result "))
    requests, duration_us, bad_status, socket_errors = (int(v) for v in line.split()[1:5])
    p50, p99 = (float(v) for v in line.split()[5:7])
    # wrk counts responses with status > 399 as requests too; they are errors here.
    return Result(protocol, concurrency, requests - bad_status, bad_status + socket_errors,
                  duration_us / 1e6, p50, p99)


def _grpc_load(host: str, port: int, model: str, concurrency: int, seconds: int,
               inputs: Inputs, outputs: list[str], warmup: int, prefix: list[str]) -> Result:
    request = grpc_request(model, inputs, outputs)
    response_size = check_grpc(host, port, request, outputs)
    message = request.SerializeToString()
    url = f"http://{host}:{port}/inference.GRPCInferenceService/ModelInfer"
    with tempfile.TemporaryDirectory(prefix="bench-h2load-") as tmp:
        data, log = Path(tmp) / "request.bin", Path(tmp) / "requests.log"
        # gRPC framing: not compressed, 4-byte big-endian length, message.
        data.write_bytes(b"\0" + len(message).to_bytes(4, "big") + message)
        command = [*prefix, "h2load", "-c1", f"-m{concurrency}", f"--data={data}",
                   "--header=content-type: application/grpc", "--header=te: trailers"]
        if warmup:
            _run([*command, f"--duration={warmup}", url])
        out = _run([*command, f"--duration={seconds}", f"--log-file={log}", url])
        # One row per finished request: start (us since epoch), HTTP status (-1: stream
        # failed), microseconds until the end of the response.
        rows = np.array([row.split("\t")[:3] for row in log.read_text().splitlines()],
                        dtype=np.int64).reshape(-1, 3)
    ok = rows[:, 1] == 200
    succeeded = int(ok.sum())
    # Messages received across the run; a gRPC error comes as HTTP 200 with none (h2load counts
    # bytes of streams still open at the end too, so this can only miss errors, not invent them).
    received = int(re.search(r"\((\d+)\) data", out).group(1)) // response_size
    no_message = max(0, succeeded - received)
    latencies = rows[ok, 2]
    p50, p99 = np.percentile(latencies, [50, 99]) if len(latencies) else (np.nan, np.nan)
    return Result("grpc", concurrency, succeeded - no_message,
                  len(rows) - succeeded + no_message, float(seconds), float(p50), float(p99))


def run_load(protocol: str, host: str, port: int, model: str, concurrency: int, seconds: int,
             inputs: Inputs, outputs: list[str], warmup: int = 1,
             prefix: Sequence[str] = ()) -> Result:
    """Closed loop: `concurrency` requests always in flight, each resent as soon as answered.

    `prefix` runs the load generator under another command, e.g. ("taskset", "-c", "1").
    wrk takes whole seconds, so `seconds` and `warmup` (0: none) are integers.
    """
    if protocol == "grpc":
        return _grpc_load(host, port, model, concurrency, seconds, inputs, outputs, warmup,
                          list(prefix))
    return _http_load(host, port, model, concurrency, seconds, inputs, outputs, warmup,
                      list(prefix), protocol)


def machine_load() -> str:
    """How busy the machine was, for a table's title: figures taken beside other work are not
    comparable with a quiet machine's."""
    return f"1-minute load average {os.getloadavg()[0]:.1f} at the end of the run"
