"""`make bench`: throughput and latency tables, Tritium alone and side by side with Triton.

Suites:
- identity: Tritium's identity backend (FP32 [1,16]), the server's own overhead.
- python: Triton's add_sub python-backend model (FP32 [16], max_batch_size 8, one instance)
  served by Tritium and by real Triton 2.51, measured in alternation in the same run.
- onnx: a small ONNX MLP (64 -> 128 -> 16, FP32) on Tritium's onnxruntime backend at
  concurrency 1, batch 1 and 8, next to the same onnxruntime session settings called directly in
  one process: the difference in time per request is the server's overhead.

The server runs pinned to core 0 (`taskset`) and the load generators (wrk for HTTP, h2load for
gRPC; see loadgen.py) on core 1, so each side has one core. Results print as Markdown tables
and are written to bench/results.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
import onnx_bench  # noqa: E402
import reference_triton  # noqa: E402
from loadgen import Inputs, Result, missing_tools, run_load  # noqa: E402
from models import identity_config, write_model  # noqa: E402
from server_process import ServerProcess  # noqa: E402

SERVER_CORE, CLIENT_CORE = "0", 1


class TritonProcess(ServerProcess):
    """Real Triton on the same footing as Tritium (same ports scheme, same pinning)."""

    def command(self) -> list[str]:
        return [*self.prefix, *reference_triton.command(
            Path(self.repositories[0]), self.http_port, self.grpc_port, self.metrics_port)]

    def environment(self) -> dict[str, str]:
        return reference_triton.environment()

    def wait_live(self, timeout: float = 120.0, endpoint: str = "ready") -> None:
        super().wait_live(timeout, endpoint)


def cell(server: ServerProcess, protocol: str, model: str, concurrency: int, seconds: int,
         inputs: Inputs, outputs: list[str], client_pin: list[str]) -> Result:
    port = server.http_port if protocol == "http" else server.grpc_port
    return run_load(protocol, "127.0.0.1", port, model, concurrency, seconds, inputs, outputs,
                    prefix=client_pin)


def single_table(title: str, results: list[Result]) -> str:
    lines = [f"### {title}", "",
             "| protocol | concurrency | infer/s | p50 (us) | p99 (us) | errors |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r.protocol} | {r.concurrency} | {r.throughput:,.0f} | "
                     f"{r.p50_us:,.0f} | {r.p99_us:,.0f} | {r.errors} |")
    return "\n".join(lines)


def comparison_table(title: str, pairs: list[tuple[Result, Result]]) -> str:
    lines = [f"### {title}", "",
             "| protocol | conc. | Tritium infer/s | Triton infer/s | ratio | Tritium p50/p99 (us) "
             "| Triton p50/p99 (us) | errors (Tritium/Triton) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for ours, theirs in pairs:
        ratio = ours.throughput / theirs.throughput if theirs.throughput else float("nan")
        lines.append(
            f"| {ours.protocol} | {ours.concurrency} | {ours.throughput:,.0f} | "
            f"{theirs.throughput:,.0f} | {ratio:.2f}x | {ours.p50_us:,.0f} / {ours.p99_us:,.0f} | "
            f"{theirs.p50_us:,.0f} / {theirs.p99_us:,.0f} | {ours.errors}/{theirs.errors} |")
    return "\n".join(lines)


def identity_suite(args: argparse.Namespace, pin: list[str], client_pin: list[str]) -> str:
    inputs = [("INPUT0", np.random.default_rng(0).random((1, 16), dtype=np.float32))]
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        write_model(repo, "identity_fp32", identity_config("identity_fp32", dims="[ 16 ]"))
        results = []
        with ServerProcess([repo], prefix=pin) as server:
            for protocol in ("http", "grpc"):
                for concurrency in args.concurrency:
                    r = cell(server, protocol, "identity_fp32", concurrency, args.seconds,
                             inputs, ["OUTPUT0"], client_pin)
                    print(f"identity {protocol} c={concurrency}: {r.throughput:,.0f}/s", flush=True)
                    results.append(r)
    return single_table("Tritium, identity backend, FP32 [1,16], one instance", results)


def python_suite(args: argparse.Namespace, pin: list[str], client_pin: list[str]) -> str:
    rng = np.random.default_rng(0)
    inputs = [("INPUT0", rng.random((1, 16), dtype=np.float32)),
              ("INPUT1", rng.random((1, 16), dtype=np.float32))]
    outputs = ["OUTPUT0", "OUTPUT1"]
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(HERE / "models", repo)
        tritium = ServerProcess([repo], prefix=pin).start()
        triton = None if args.no_triton else TritonProcess([repo], prefix=pin).start(timeout=300)
        pairs, alone = [], []
        try:
            for protocol in ("http", "grpc"):
                for concurrency in args.concurrency:
                    ours = cell(tritium, protocol, "add_sub", concurrency, args.seconds,
                                inputs, outputs, client_pin)
                    line = f"add_sub {protocol} c={concurrency}: tritium {ours.throughput:,.0f}/s"
                    if triton is None:
                        alone.append(ours)
                    else:
                        theirs = cell(triton, protocol, "add_sub", concurrency, args.seconds,
                                      inputs, outputs, client_pin)
                        pairs.append((ours, theirs))
                        line += f", triton {theirs.throughput:,.0f}/s"
                    print(line, flush=True)
        finally:
            tritium.stop()
            if triton is not None:
                triton.stop()
    title = "add_sub python model, FP32 [1,16] x2, one instance"
    if triton is None:
        return single_table(f"Tritium, {title}", alone)
    return comparison_table(f"Tritium vs Triton 2.51, {title}", pairs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", choices=["identity", "python", "onnx", "all"], default="all")
    parser.add_argument("--seconds", type=int, default=5, help="measured time per cell")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--no-triton", action="store_true", help="skip real Triton")
    parser.add_argument("--no-pin", action="store_true", help="do not pin server and client")
    parser.add_argument("--output", type=Path, default=HERE / "results.md")
    args = parser.parse_args()
    missing = missing_tools()
    if missing:
        parser.error(f"{' and '.join(missing)} not found: apt-get install wrk nghttp2-client "
                     "(`make bench` does)")

    pin: list[str] = []
    client_pin: list[str] = []
    if not args.no_pin and shutil.which("taskset") and os.cpu_count() and os.cpu_count() > 1:
        pin = ["taskset", "-c", SERVER_CORE]
        client_pin = ["taskset", "-c", str(CLIENT_CORE)]
        os.sched_setaffinity(0, {CLIENT_CORE})
    tables = []
    if args.suite in ("identity", "all"):
        tables.append(identity_suite(args, pin, client_pin))
    if args.suite in ("python", "all"):
        tables.append(python_suite(args, pin, client_pin))
    if args.suite in ("onnx", "all"):
        tables.append(onnx_bench.onnx_suite(args.seconds, pin, client_pin))
    text = "\n\n".join(tables)
    pinning = "server on core 0, wrk/h2load on core 1" if pin else "unpinned"
    text += f"\n\n({args.seconds} s per cell, {pinning})\n"
    print("\n" + text)
    args.output.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
