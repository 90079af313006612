"""The inprocess suite of `make bench`: Triton's in-process API against the same model over
HTTP and gRPC.

Two models: the add_sub python-backend model (FP32 [16] x2; its instance is a stub process) and
the identity backend (FP32 [1,16], runs in the server process). In-process, `Model.infer` is
called back to back by 1 and by 8 threads of one process (the server's core: `taskset` as the
served runs get); over the network the same model is served by `tritium serve` and loaded by
wrk/h2load from the other core (loadgen.py). At one caller, each side's time per request is
1/throughput: the difference is what the frontends (transport, decode, encode, the event loop's
hand-offs) add to every request.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from loadgen import Result, run_load

from support import ROOT
from support.models import identity_config, write_model
from support.server_process import ServerProcess

HERE = Path(__file__).resolve().parent
CALLERS = (1, 8)


def _inputs(model: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    if model == "add_sub":
        return {"INPUT0": rng.random((1, 16), dtype=np.float32),
                "INPUT1": rng.random((1, 16), dtype=np.float32)}
    return {"INPUT0": rng.random((1, 16), dtype=np.float32)}


def measure_in_process(repo: str, model: str, callers: int, seconds: float) -> dict[str, float]:
    """(Run in a worker process.) Back-to-back Model.infer from `callers` threads."""
    sys.path.insert(0, str(ROOT / "src"))
    import tritonserver

    server = tritonserver.Server(model_repository=repo).start(wait_until_ready=True)
    handle = server.model(model)
    inputs = _inputs(model)
    latencies: list[list[float]] = [[] for _ in range(callers)]
    stop = threading.Event()

    def call(slot: list[float]) -> None:
        clock = time.perf_counter
        while not stop.is_set():
            start = clock()
            for response in handle.infer(inputs=inputs):
                response.outputs["OUTPUT0"]
            slot.append(clock() - start)

    for _ in range(200):  # warm-up
        list(handle.infer(inputs=inputs))
    threads = [threading.Thread(target=call, args=(slot,)) for slot in latencies]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    server.stop()
    everything = np.array([x for slot in latencies for x in slot]) * 1e6
    return {"requests": float(len(everything)), "seconds": elapsed,
            "p50_us": float(np.percentile(everything, 50)),
            "p99_us": float(np.percentile(everything, 99))}


def _in_process(repo: Path, model: str, callers: int, seconds: int, pin: list[str]) -> Result:
    command = [*pin, sys.executable, str(Path(__file__).resolve()), "--worker", str(repo), model,
               str(callers), str(seconds)]
    out = subprocess.run(command, capture_output=True, text=True, check=True,
                         timeout=seconds + 300).stdout
    figures = json.loads(out.strip().splitlines()[-1])
    return Result("in-process", callers, int(figures["requests"]), 0, figures["seconds"],
                  figures["p50_us"], figures["p99_us"])


def _repository(tmp: Path) -> Path:
    repo = tmp / "repo"
    shutil.copytree(HERE / "models", repo)
    write_model(repo, "identity_fp32", identity_config("identity_fp32", dims="[ 16 ]"))
    return repo


def inprocess_suite(seconds: int, pin: list[str], client_pin: list[str]) -> str:
    lines = ["### Tritium in-process (`tritonserver` API) vs the same model over HTTP/gRPC", "",
             "| model | path | callers | infer/s | p50 (us) | p99 (us) | errors |",
             "|---|---|---:|---:|---:|---:|---:|"]
    overhead = ["", ("| model | path | time per request at 1 caller (us) | added by the "
                     "frontend (us) |"), "|---|---|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        repo = _repository(Path(tmp))
        for model in ("add_sub", "identity_fp32"):
            inputs = list(_inputs(model).items())
            outputs = ["OUTPUT0", "OUTPUT1"] if model == "add_sub" else ["OUTPUT0"]
            rows = [_in_process(repo, model, callers, seconds, pin) for callers in CALLERS]
            with ServerProcess([repo], prefix=pin) as server:
                for protocol, port in (("http", server.http_port), ("grpc", server.grpc_port)):
                    for callers in CALLERS:
                        rows.append(run_load(protocol, "127.0.0.1", port, model, callers,
                                             seconds, inputs, outputs, prefix=client_pin))
            base = next(r for r in rows if r.protocol == "in-process" and r.concurrency == 1)
            for r in rows:
                print(f"inprocess {model} {r.protocol} c={r.concurrency}: "
                      f"{r.throughput:,.0f}/s", flush=True)
                lines.append(f"| {model} | {r.protocol} | {r.concurrency} | "
                             f"{r.throughput:,.0f} | {r.p50_us:,.0f} | {r.p99_us:,.0f} | "
                             f"{r.errors} |")
                if r.concurrency == 1 and r.throughput:
                    per = 1e6 / r.throughput
                    added = per - 1e6 / base.throughput
                    overhead.append(f"| {model} | {r.protocol} | {per:,.0f} | "
                                    f"{'-' if r is base else f'{added:,.0f}'} |")
    return "\n".join(lines + overhead)


if __name__ == "__main__" and sys.argv[1:2] == ["--worker"]:
    repo_arg, model_arg, callers_arg, seconds_arg = sys.argv[2:6]
    print(json.dumps(measure_in_process(repo_arg, model_arg, int(callers_arg),
                                        float(seconds_arg))))
