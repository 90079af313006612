"""The `native` suite: a compiled identity backend through Tritium's C API next to Tritium's
built-in Python identity backend, FP32 [1,16], HTTP and gRPC, one server pinned to one core.

The compiled backend is measured through both Execute runners (the hot-path extension and
ctypes, one server each, both pinned to the same core) and the Python backend next to it (one
instance each, no batching), in alternation per cell; besides infer/s and latency, the server's
CPU time per inference comes from /proc/<pid>/stat (user + system) around each cell.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from loadgen import Result, machine_load, run_load  # noqa: E402

from support.models import identity_config, write_model  # noqa: E402
from support.native_fixtures import compile_backends  # noqa: E402
from support.server_process import ServerProcess  # noqa: E402

# (label, server, model): the compiled backend through each Execute runner (batch.py), next
# to the Python backend; the two servers run side by side, pinned alike, measured in turn.
CELLS = [("C backend, hot path", "hotpath", "native_identity_fp32"),
         ("C backend, ctypes", "ctypes", "native_identity_fp32"),
         ("Python backend", "hotpath", "py_identity_fp32")]
ONE_INSTANCE = "instance_group [ { kind: KIND_CPU count: 1 } ]"


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def native_suite(args: argparse.Namespace, pin: list[str], client_pin: list[str]) -> str:
    inputs = [("INPUT0", np.random.default_rng(0).random((1, 16), dtype=np.float32))]
    rows: list[tuple[str, Result, float]] = []
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        base = Path(tmp)
        backends = compile_backends(base / "backends", {"native_identity": "identity"})
        repo = base / "models"
        for model in {model for _, _, model in CELLS}:
            config = identity_config(model, dims="[ 16 ]", extra=ONE_INSTANCE)
            if model.startswith("native"):
                config = config.replace('backend: "identity"', 'backend: "native_identity"')
            write_model(repo, model, config)
        servers = {
            runner: stack.enter_context(ServerProcess(
                [repo], f"--backend-directory={backends}", prefix=pin,
                env={"TRITIUM_NATIVE_HOTPATH": "1" if runner == "hotpath" else "0"}))
            for runner in ("hotpath", "ctypes")
        }
        for protocol in ("http", "grpc"):
            for concurrency in args.concurrency:
                for label, runner, model in CELLS:
                    server = servers[runner]
                    assert server.process is not None
                    port = server.http_port if protocol == "http" else server.grpc_port
                    before = _cpu_seconds(server.process.pid)
                    r = run_load(protocol, "127.0.0.1", port, model, concurrency,
                                 args.seconds, inputs, ["OUTPUT0"], prefix=client_pin)
                    cpu = _cpu_seconds(server.process.pid) - before
                    per_inference = cpu / r.requests * 1e6 if r.requests else float("nan")
                    print(f"native {label} {protocol} c={concurrency}: "
                          f"{r.throughput:,.0f}/s, {per_inference:,.0f} us CPU", flush=True)
                    rows.append((label, r, per_inference))
    title = ("### Tritium, compiled identity backend (C API) vs Python identity backend, "
             f"FP32 [1,16], one instance ({machine_load()})")
    header = ("| backend | protocol | conc. | infer/s | p50 (us) | p99 (us) | "
              "server CPU/infer (us) | errors |")
    lines = [title, "", header, "|---|---|---:|---:|---:|---:|---:|---:|"]
    for label, r, cpu in rows:
        lines.append(f"| {label} | {r.protocol} | {r.concurrency} | {r.throughput:,.0f} | "
                     f"{r.p50_us:,.0f} | {r.p99_us:,.0f} | {cpu:,.0f} | {r.errors} |")
    return "\n".join(lines)
