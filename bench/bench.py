"""`make bench`: throughput and latency tables, Tritium alone and side by side with Triton.

Suites:
- identity: Tritium's identity backend (FP32 [1,16]), the server's own overhead.
- python: Triton's add_sub python-backend model (FP32 [16], max_batch_size 8, one instance)
  and issue 14's identity_fp32 (FP32 [-1], two instances, dynamic batching 500 us), served by
  Tritium and by real Triton 2.51, measured in alternation in the same run (`--rounds`, default
  2: each cell's runs alternate between the servers and are added up); with each cell the
  server CPU per inference (server_cpu.py), and the idle stubs' RSS of both servers.
- onnx: a small ONNX MLP (64 -> 128 -> 16, FP32) on Tritium's onnxruntime backend at
  concurrency 1, batch 1 and 8, next to the same onnxruntime session settings called directly in
  one process: the difference in time per request is the server's overhead.
- batching: the identity backend at concurrency 32 (--batch-concurrency), with and without
  `dynamic_batching`, with no execute cost and with a fixed 2 ms one (execute_delay_ms, the
  shape of a GPU kernel launch) that batching amortises.
- python-batching: add_sub with `dynamic_batching { }`, Tritium vs Triton 2.51.
- inprocess: Triton's in-process API (`Model.infer`, 1 and 8 callers) on add_sub and on the
  identity backend, next to the same models over HTTP and gRPC (inprocess_bench.py).
- llm: the llm backend's continuous batching (over gRPC and the OpenAI API) on a tiny Llama and
  on issue 32's load (hidden 512, 32 streams) against transformers' generate one request at a
  time and in static batches, and vLLM's OpenAI server on the same model when VLLM_PYTHON
  names an interpreter with vLLM (llm_bench.py).
- ray: instances on a simulated Ray cluster: a 20 ms CPU-bound Python model on one node vs
  two, add_sub local vs on Ray, start-up time and memory per actor (ray_bench.py).
- native: a compiled identity backend through Tritium's C API vs the Python identity backend
  (native_bench.py), with the server's CPU time per inference.
- gpu (not part of `all`; on a machine with a CUDA GPU): issue 29's TorchScript MLP served
  KIND_GPU and KIND_CPU beside torch's own forward on the GPU (gpu_bench.py, which has its own
  Python load generator and more options).

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

import gpu_bench  # noqa: E402
import inprocess_bench  # noqa: E402
import llm_bench  # noqa: E402
import native_bench  # noqa: E402
import numpy as np  # noqa: E402
import onnx_bench  # noqa: E402
import ray_bench  # noqa: E402
import reference_triton  # noqa: E402
from loadgen import Inputs, Result, missing_tools, run_load  # noqa: E402
from server_cpu import CpuMeter, stub_memory  # noqa: E402

from support.models import identity_config, write_model  # noqa: E402
from support.server_process import ServerProcess  # noqa: E402

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
    port = server.grpc_port if protocol == "grpc" else server.http_port
    # Warm up apart from the timed run, so the CPU read around it covers that run only.
    run_load(protocol, "127.0.0.1", port, model, concurrency, 1, inputs, outputs, warmup=0,
             prefix=client_pin)
    assert server.process is not None
    with CpuMeter(server.process.pid) as meter:
        result = run_load(protocol, "127.0.0.1", port, model, concurrency, seconds, inputs,
                          outputs, warmup=0, prefix=client_pin)
    result.cpu_us = meter.per_request_us(result.requests + result.errors)
    return result


def merge_rounds(results: list[Result]) -> Result:
    """Rounds of one cell as one: requests over the time of all, CPU per request over all,
    latency percentiles averaged (the load generators report percentiles, not samples)."""
    if len(results) == 1:
        return results[0]
    served = sum(r.requests + r.errors for r in results)
    return Result(
        results[0].protocol, results[0].concurrency,
        requests=sum(r.requests for r in results), errors=sum(r.errors for r in results),
        seconds=sum(r.seconds for r in results),
        p50_us=sum(r.p50_us for r in results) / len(results),
        p99_us=sum(r.p99_us for r in results) / len(results),
        cpu_us=sum(r.cpu_us * (r.requests + r.errors) for r in results) / served
        if served else float("nan"),
    )


def single_table(title: str, results: list[Result]) -> str:
    lines = [f"### {title}", "",
             "| protocol | concurrency | infer/s | p50 (us) | p99 (us) "
             "| server CPU per inference (us) | errors |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r.protocol} | {r.concurrency} | {r.throughput:,.0f} | "
                     f"{r.p50_us:,.0f} | {r.p99_us:,.0f} | {r.cpu_us:,.0f} | {r.errors} |")
    return "\n".join(lines)


def comparison_table(title: str, pairs: list[tuple[Result, Result]]) -> str:
    lines = [f"### {title}", "",
             "| protocol | conc. | Tritium infer/s | Triton infer/s | ratio | Tritium p50/p99 (us) "
             "| Triton p50/p99 (us) | server CPU per inference, Tritium/Triton (us) "
             "| errors (Tritium/Triton) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for ours, theirs in pairs:
        ratio = ours.throughput / theirs.throughput if theirs.throughput else float("nan")
        lines.append(
            f"| {ours.protocol} | {ours.concurrency} | {ours.throughput:,.0f} | "
            f"{theirs.throughput:,.0f} | {ratio:.2f}x | {ours.p50_us:,.0f} / {ours.p99_us:,.0f} | "
            f"{theirs.p50_us:,.0f} / {theirs.p99_us:,.0f} | {ours.cpu_us:,.0f} / "
            f"{theirs.cpu_us:,.0f} | {ours.errors}/{theirs.errors} |")
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


BATCHING_DELAYS_MS = (0, 2)


def _delay(ms: int) -> str:
    return f'parameters {{ key: "execute_delay_ms" value: {{ string_value: "{ms}" }} }}\n'


def batching_suite(args: argparse.Namespace, pin: list[str], client_pin: list[str]) -> str:
    inputs = [("INPUT0", np.random.default_rng(0).random((1, 16), dtype=np.float32))]
    lines = ["### Tritium, identity backend, FP32 [1,16], one instance, max_batch_size 32: "
             "dynamic batching", "",
             "| execute cost | protocol | conc. | unbatched infer/s | batched infer/s | ratio "
             "| batched p50/p99 (us) | errors (unbatched/batched) |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        for delay in BATCHING_DELAYS_MS:
            for batching in ("", "dynamic_batching { }"):
                name = f"identity_{delay}ms{'_batched' if batching else ''}"
                write_model(repo, name, identity_config(name, dims="[ 16 ]", max_batch_size=32,
                                                        extra=_delay(delay) + batching))
        with ServerProcess([repo], prefix=pin) as server:
            for delay in BATCHING_DELAYS_MS:
                for protocol in ("http", "grpc"):
                    for concurrency in args.batch_concurrency:
                        plain, batched = (
                            cell(server, protocol, name, concurrency, args.seconds, inputs,
                                 ["OUTPUT0"], client_pin)
                            for name in (f"identity_{delay}ms", f"identity_{delay}ms_batched"))
                        ratio = batched.throughput / plain.throughput if plain.throughput else 0
                        print(f"identity {delay} ms {protocol} c={concurrency}: "
                              f"{plain.throughput:,.0f}/s unbatched, "
                              f"{batched.throughput:,.0f}/s batched", flush=True)
                        lines.append(
                            f"| {delay} ms | {protocol} | {concurrency} | "
                            f"{plain.throughput:,.0f} | {batched.throughput:,.0f} | {ratio:.2f}x | "
                            f"{batched.p50_us:,.0f} / {batched.p99_us:,.0f} | "
                            f"{plain.errors}/{batched.errors} |")
    return "\n".join(lines)


def _python_models() -> dict[str, tuple[Inputs, list[str], str]]:
    """The python suite's models: inputs, outputs, and the table's title."""
    rng = np.random.default_rng(0)
    return {
        "add_sub": ([("INPUT0", rng.random((1, 16), dtype=np.float32)),
                     ("INPUT1", rng.random((1, 16), dtype=np.float32))],
                    ["OUTPUT0", "OUTPUT1"],
                    "add_sub python model, FP32 [1,16] x2, one instance"),
        "identity_fp32": ([("INPUT0", rng.random((1, 16), dtype=np.float32))], ["OUTPUT0"],
                          "identity_fp32 python model, FP32 [1,16], two instances, "
                          "dynamic batching (500 us)"),
    }


def add_load_arguments(parser: argparse.ArgumentParser, seconds: int) -> None:
    """What the profiling tools (profile_server, thread_cpu) drive: one python-suite model over
    one protocol at one concurrency."""
    parser.add_argument("--model", default="add_sub", choices=sorted(_python_models()))
    parser.add_argument("--protocol", default="http", choices=["http", "grpc"])
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seconds", type=int, default=seconds)


def python_suite(args: argparse.Namespace, pin: list[str], client_pin: list[str],
                 batched: bool = False) -> str:
    """add_sub and identity_fp32 as they are (and identity_fp32 with FP32 [1,1000] as JSON
    data over HTTP), or (batched) a copy of add_sub named add_sub_batched with dynamic
    batching; the idle stubs' memory of both servers after."""
    models = _python_models()
    if batched:
        inputs, outputs, title = models["add_sub"]
        models = {"add_sub_batched": (inputs, outputs, title + ", dynamic batching")}
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(HERE / "models", repo)
        if batched:
            shutil.copytree(repo / "add_sub", repo / "add_sub_batched")
            config = (repo / "add_sub_batched" / "config.pbtxt").read_text()
            (repo / "add_sub_batched" / "config.pbtxt").write_text(
                config.replace('name: "add_sub"', 'name: "add_sub_batched"')
                + "dynamic_batching { }\n")
        tritium = ServerProcess([repo], prefix=pin).start()
        triton = None if args.no_triton else TritonProcess([repo], prefix=pin).start(timeout=300)
        servers = (tritium, triton)
        concurrencies = args.batch_concurrency if batched else args.concurrency
        tables = []
        try:
            memory = [f"- idle stub RSS, Tritium: {stub_memory(tritium.process.pid)}"]
            if triton is not None:
                memory.append(f"- idle stub RSS, Triton (triton_python_backend_stub): "
                              f"{stub_memory(triton.process.pid)}")
            for model, (inputs, outputs, title) in models.items():
                tables.append(_python_rows(args.seconds, servers, client_pin, model,
                                           ("http", "grpc"), concurrencies, inputs, outputs,
                                           title, args.rounds))
            if not batched:
                inputs = [("INPUT0", np.random.default_rng(0).random((1, 1000),
                                                                   dtype=np.float32))]
                tables.append(_python_rows(
                    args.seconds, servers, client_pin, "identity_fp32", ("http-json",),
                    concurrencies, inputs, ["OUTPUT0"],
                    "identity_fp32 python model, FP32 [1,1000] as JSON data both ways, two "
                    "instances, dynamic batching (500 us)", args.rounds))
        finally:
            tritium.stop()
            if triton is not None:
                triton.stop()
    if not batched:
        tables.append("\n".join(memory))
    return "\n\n".join(tables)


def _python_rows(seconds: int, servers: tuple[ServerProcess, ServerProcess | None],
                 client_pin: list[str], model: str, protocols: tuple[str, ...],
                 concurrencies: list[int], inputs: Inputs, outputs: list[str], title: str,
                 rounds: int) -> str:
    """One model's table: each protocol at each concurrency, Tritium then Triton, `rounds`
    times in alternation (a slow spell of the host then falls on both servers)."""
    tritium, triton = servers
    pairs, alone = [], []
    for protocol in protocols:
        for concurrency in concurrencies:
            ours_rounds: list[Result] = []
            theirs_rounds: list[Result] = []
            for _ in range(rounds):
                ours_rounds.append(cell(tritium, protocol, model, concurrency, seconds, inputs,
                                        outputs, client_pin))
                if triton is not None:
                    theirs_rounds.append(cell(triton, protocol, model, concurrency, seconds,
                                              inputs, outputs, client_pin))
            ours = merge_rounds(ours_rounds)
            line = (f"{model} {protocol} c={concurrency}: tritium {ours.throughput:,.0f}/s "
                    f"{ours.cpu_us:,.0f} us CPU")
            if triton is None:
                alone.append(ours)
            else:
                theirs = merge_rounds(theirs_rounds)
                pairs.append((ours, theirs))
                line += f", triton {theirs.throughput:,.0f}/s {theirs.cpu_us:,.0f} us CPU"
            print(line, flush=True)
    return (single_table(f"Tritium, {title}", alone) if triton is None
            else comparison_table(f"Tritium vs Triton 2.51, {title}", pairs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", choices=["identity", "python", "onnx", "batching",
                                            "python-batching", "inprocess", "llm", "native",
                                            "ray", "gpu", "all"],
                        default="all")
    parser.add_argument("--seconds", type=int, default=5, help="measured time per cell")
    parser.add_argument("--rounds", type=int, default=2,
                        help="python suites: measured runs per cell, Tritium and Triton in "
                             "alternation (throughput and CPU over all, percentiles averaged)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--batch-concurrency", type=int, nargs="+", default=[32],
                        help="concurrency of the batching suites")
    parser.add_argument("--no-triton", action="store_true", help="skip real Triton")
    parser.add_argument("--no-pin", action="store_true", help="do not pin server and client")
    parser.add_argument("--output", type=Path, default=HERE / "results.md")
    args = parser.parse_args()
    if args.suite == "gpu":  # no wrk/h2load and nothing pinned: see gpu_bench.py
        return gpu_bench.main(["--markdown", str(args.output)])
    missing = missing_tools() if args.suite != "llm" else []  # llm streams with its own clients
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
    if args.suite in ("batching", "all"):
        tables.append(batching_suite(args, pin, client_pin))
    if args.suite in ("python-batching", "all"):
        tables.append(python_suite(args, pin, client_pin, batched=True))
    if args.suite in ("inprocess", "all"):
        tables.append(inprocess_bench.inprocess_suite(args.seconds, pin, client_pin))
    if args.suite in ("llm", "all"):
        tables.append(llm_bench.llm_suite(pin))
    if args.suite in ("ray", "all"):
        tables.append(ray_bench.ray_suite(args.seconds))
    if args.suite in ("native", "all"):
        tables.append(native_bench.native_suite(args, pin, client_pin))
    text = "\n\n".join(tables)
    pinning = "server on core 0, wrk/h2load on core 1" if pin else "unpinned"
    rounds = f", python suites {args.rounds} rounds in alternation" if args.rounds > 1 else ""
    text += f"\n\n({args.seconds} s per cell{rounds}, {pinning})\n"
    print("\n" + text)
    args.output.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
