"""The onnx suite of `make bench`: Tritium's onnxruntime backend against onnxruntime itself.

An MLP (64 -> 128 -> 16, FP32) is served with one instance and one intra-op thread, on the
server's core; the same model runs in this process with the same session settings, on the load
generator's core. At concurrency 1 each side's time per request is 1/throughput, so their
difference is what the server adds to every request (decode, schedule, gather, scatter, encode).

That difference also holds the floor of the measurement: a server that does no work at all
(null_server.py, Tritium's transports answering a canned response) still takes some time per
request at concurrency 1 (load generator, loopback, wake-ups). The table shows that floor and
what is left once it is taken away: the server's own work per request.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
from loadgen import Result, run_load

from support import onnx_models
from support.models import write_model
from support.server_process import ServerProcess

HERE = Path(__file__).resolve().parent
BATCHES = (1, 8)
THREADS = 1

CONFIG = f"""
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ {{ name: "x" data_type: TYPE_FP32 dims: [ 64 ] }} ]
output [ {{ name: "logits" data_type: TYPE_FP32 dims: [ 16 ] }} ]
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
parameters {{ key: "intra_op_thread_count" value: {{ string_value: "{THREADS}" }} }}
parameters {{ key: "inter_op_thread_count" value: {{ string_value: "{THREADS}" }} }}
"""


def direct_rate(path: Path, x: np.ndarray, seconds: float) -> float:
    """Calls per second of `session.run` alone, with the server's session settings."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = THREADS
    options.inter_op_num_threads = THREADS
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    for _ in range(100):  # warm-up
        session.run(["logits"], {"x": x})
    calls, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(100):
            session.run(["logits"], {"x": x})
        calls += 100
    return calls / elapsed


class NullServer(ServerProcess):
    """null_server.py on the same footing as Tritium (same ports scheme, same pinning)."""

    def command(self) -> list[str]:
        return [*self.prefix, sys.executable, str(HERE / "null_server.py"),
                str(self.http_port), str(self.grpc_port)]


def table(rows: list[tuple[int, Result, float, float]]) -> str:
    lines = ["### Tritium onnxruntime backend vs onnxruntime in-process, MLP 64-128-16 FP32, "
             "concurrency 1", "",
             "| batch | protocol | Tritium req/s | Tritium infer/s | p50 (us) | onnxruntime "
             "direct calls/s | server overhead per request (us) | null server's time per "
             "request (us) | overhead above the null server (us) | errors |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for batch, r, direct, floor in rows:
        overhead = 1e6 / r.throughput - 1e6 / direct if r.throughput else float("nan")
        floor_us = 1e6 / floor if floor else float("nan")
        lines.append(f"| {batch} | {r.protocol} | {r.throughput:,.0f} | "
                     f"{r.throughput * batch:,.0f} | {r.p50_us:,.0f} | {direct:,.0f} | "
                     f"{overhead:,.0f} | {floor_us:,.0f} | {overhead - floor_us:,.0f} | "
                     f"{r.errors} |")
    return "\n".join(lines)


def floor_rates(seconds: int, pin: list[str], client_pin: list[str],
                x: np.ndarray) -> dict[str, float]:
    """Requests/s of the null server at concurrency 1, per protocol."""
    with NullServer([], prefix=pin) as null:
        return {
            protocol: run_load(protocol, "127.0.0.1",
                               null.http_port if protocol == "http" else null.grpc_port,
                               "mlp", 1, seconds, [("x", x)], ["logits"],
                               prefix=client_pin).throughput
            for protocol in ("http", "grpc")
        }


def onnx_suite(seconds: int, pin: list[str], client_pin: list[str]) -> str:
    rng = np.random.default_rng(0)
    rows: list[tuple[int, Result, float, float]] = []
    floors = floor_rates(seconds, pin, client_pin,
                         rng.standard_normal((1, 64)).astype(np.float32))
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        write_model(repo, "mlp", CONFIG)
        path = onnx_models.save(onnx_models.mlp(), repo / "mlp" / "1" / "model.onnx")
        with ServerProcess([repo], prefix=pin) as server:
            for batch in BATCHES:
                x = rng.standard_normal((batch, 64)).astype(np.float32)
                direct = direct_rate(path, x, seconds)
                for protocol in ("http", "grpc"):
                    port = server.http_port if protocol == "http" else server.grpc_port
                    r = run_load(protocol, "127.0.0.1", port, "mlp", 1, seconds, [("x", x)],
                                 ["logits"], prefix=client_pin)
                    print(f"onnx mlp batch {batch} {protocol} c=1: {r.throughput:,.0f}/s, "
                          f"onnxruntime direct {direct:,.0f}/s", flush=True)
                    rows.append((batch, r, direct, floors[protocol]))
    return table(rows)
