"""The GPU suite of `make bench` (issue 29): a TorchScript MLP served by Tritium's pytorch backend
on the GPU, beside torch running the same forward on the same GPU, and the same model on the CPU.

Model: 4 x Linear(2048, 2048) with ReLU between, FP32 (support.torch_models.square_mlp),
`platform: "pytorch_libtorch"`, `max_batch_size: 64`, no dynamic batching; one Tritium serves it
twice: `mlp_gpu`, one KIND_GPU instance on GPU 0, and `mlp_cpu`, one KIND_CPU instance.

Cells (each a warm-up, then `--seconds` of closed loop): `mlp_gpu` at batch 1/8/64 x HTTP
(binary tensor data) and gRPC x concurrency 1/8/32; `mlp_cpu` at batch 64, both protocols, at
concurrency 1 and 8 (`--cpu-concurrency`). Per cell: inferences/s (requests/s x batch), p50/p99
latency as the client sees it, and the server's compute time per execution at that batch size
from the statistics extension (`batch_stats` compute_infer ns / count, across the timed window).

Direct: this process loads the same TorchScript file onto the same device and times one forward
at a time with the inputs already there, `torch.cuda.synchronize()` after each, so a timing
covers the kernels and not just their launch; also the round trip a client needs (host array in,
host array out). Targets (issue 29): server compute per batch within 1.2x of the direct forward;
served inferences/s at batch 64 at least 50 % of the direct forward's; the KIND_GPU row at batch
64 at least 20x the KIND_CPU row of the same protocol and concurrency.

Load: the GPU machine has no wrk or h2load, so Python drives it: `--clients` worker processes
(spawned, so none inherits this process's CUDA context), each one asyncio loop with tritonclient's
aio client (http.aio on aiohttp with binary data, or grpc.aio) and its share of the concurrency
as tasks that each send the next request as soon as the last one is answered. All workers count
the requests answered inside one shared window (CLOCK_MONOTONIC, the same in every process).
Python clients spend far more CPU per request than wrk/h2load: the "client CPU" column is the
cores the workers kept busy during the window; near `--clients` the clients were the limit.

`--device cpu` (and a small `--width`) runs the plumbing end to end without a GPU: the cells on
`mlp_cpu`, the direct forward on the CPU. Prints Markdown tables; `--out` writes the JSON (after
every cell, so a run cut short keeps what it measured) and `--markdown` the tables.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from support.models import write_model  # noqa: E402
from support.server_process import ServerProcess  # noqa: E402

INPUT, OUTPUT = "INPUT__0", "OUTPUT__0"
MAX_BATCH = 64
# Issue 29's targets.
COMPUTE_RATIO_MAX = 1.2
SERVED_SHARE_MIN = 0.5
GPU_OVER_CPU_MIN = 20.0


def config(name: str, width: int, kind: str) -> str:
    group = "kind: KIND_GPU gpus: [ 0 ]" if kind == "gpu" else "kind: KIND_CPU"
    return f"""
    name: "{name}"
    platform: "pytorch_libtorch"
    max_batch_size: {MAX_BATCH}
    input [ {{ name: "{INPUT}" data_type: TYPE_FP32 dims: [ {width} ] }} ]
    output [ {{ name: "{OUTPUT}" data_type: TYPE_FP32 dims: [ {width} ] }} ]
    instance_group [ {{ count: 1 {group} }} ]
    """


def write_repository(repo: Path, width: int, layers: int, kinds: list[str]) -> Path:
    """The model repository (`mlp_<kind>` per kind, one TorchScript file linked into each);
    returns that file."""
    from support import torch_models

    names = [f"mlp_{kind}" for kind in kinds]
    for name, kind in zip(names, kinds, strict=True):
        write_model(repo, name, config(name, width, kind))
    path = torch_models.save(torch_models.square_mlp(width, layers),
                             repo / names[0] / "1" / "model.pt")
    for name in names[1:]:
        os.link(path, repo / name / "1" / "model.pt")
    return path


# --- the direct forward --------------------------------------------------------------------


@dataclass
class Direct:
    batch: int
    forward_us: float  # median, inputs on the device, synchronised after each
    forward_mean_us: float
    roundtrip_us: float  # median, host array in and out
    iterations: int

    @property
    def infer_per_s(self) -> float:
        return self.batch * 1e6 / self.forward_us


def direct_forward(path: Path, device: str, batch: int, width: int, seconds: float) -> Direct:
    """Times torch running the served module on `device`, the way the backend calls it."""
    import torch

    module = torch.jit.load(str(path), map_location=device).eval()
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    host = np.random.default_rng(batch).standard_normal((batch, width), dtype=np.float32)
    x = torch.from_numpy(host).to(device)
    times: list[float] = []
    with torch.inference_mode():
        for _ in range(20):  # warm-up: cuBLAS handles, TorchScript's profiling runs
            module(x)
        sync()
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            module(x)
            sync()
            times.append(time.perf_counter() - start)
        trips: list[float] = []
        deadline = time.perf_counter() + seconds / 2
        while time.perf_counter() < deadline or len(trips) < 5:
            start = time.perf_counter()
            module(torch.from_numpy(host).to(device)).cpu().numpy()
            trips.append(time.perf_counter() - start)
    return Direct(batch, statistics.median(times) * 1e6, statistics.fmean(times) * 1e6,
                  statistics.median(trips) * 1e6, len(times))


def direct_output(path: Path, device: str, x: np.ndarray) -> np.ndarray:
    import torch

    module = torch.jit.load(str(path), map_location=device).eval()
    with torch.inference_mode():
        return module(torch.from_numpy(x).to(device)).cpu().numpy()


# --- the load generator (runs in the worker processes) -------------------------------------


def _client(protocol: str, url: str) -> tuple[Any, Any]:
    if protocol == "grpc":
        import tritonclient.grpc.aio as grpcclient

        return grpcclient, grpcclient.InferenceServerClient(url)
    import tritonclient.http.aio as httpclient

    return httpclient, httpclient.InferenceServerClient(url, conn_limit=256)


async def _drive(protocol: str, url: str, model: str, batch: int, width: int, tasks: int,
                 start: float, seconds: float) -> dict[str, Any]:
    module, client = _client(protocol, url)
    binary = {} if protocol == "grpc" else {"binary_data": True}
    x = np.random.default_rng(batch).standard_normal((batch, width), dtype=np.float32)
    inputs = [module.InferInput(INPUT, list(x.shape), "FP32")]
    inputs[0].set_data_from_numpy(x, **binary)
    outputs = [module.InferRequestedOutput(OUTPUT, **binary)]
    end = start + seconds
    latencies: list[float] = []
    errors: list[str] = []

    async def loop() -> None:
        while (sent := time.monotonic()) < end:
            try:
                result = await client.infer(model, inputs, outputs=outputs)
                shape = result.as_numpy(OUTPUT).shape
                if shape != (batch, width):
                    raise RuntimeError(f"{OUTPUT} has shape {shape}, not {(batch, width)}")
            except Exception as exc:  # counted and reported, the load goes on
                errors.append(f"{type(exc).__name__}: {exc}"[:300])
                if len(errors) > 1000:
                    return
                continue
            done = time.monotonic()
            if start <= done <= end:
                latencies.append(done - sent)

    async def cpu_window() -> float:
        await asyncio.sleep(max(0.0, start - time.monotonic()))
        used = time.process_time()
        await asyncio.sleep(max(0.0, end - time.monotonic()))
        return time.process_time() - used

    try:
        cpu, *_ = await asyncio.gather(cpu_window(), *(loop() for _ in range(tasks)))
    finally:
        await client.close()
    return {"latencies": latencies, "errors": len(errors), "first_error": errors[:1],
            "cpu_s": cpu}


def _worker(protocol: str, url: str, model: str, batch: int, width: int, tasks: int,
            start: float, seconds: float) -> dict[str, Any]:
    return asyncio.run(_drive(protocol, url, model, batch, width, tasks, start, seconds))


def _ready() -> None:
    """Each worker's initializer: the clients imported once, outside every timed window."""
    import tritonclient.grpc.aio  # noqa: F401
    import tritonclient.http.aio  # noqa: F401


# --- cells ---------------------------------------------------------------------------------


@dataclass
class Cell:
    model: str
    batch: int
    protocol: str
    concurrency: int
    seconds: float
    requests: int
    errors: int
    p50_us: float
    p99_us: float
    client_cpu: float  # cores the load generator kept busy
    compute_us: float  # the server's compute_infer per execution at this batch size
    executions: int
    first_error: list[str] = field(default_factory=list)

    @property
    def infer_per_s(self) -> float:
        return self.requests * self.batch / self.seconds


def _batch_compute(http_url: str, model: str, batch: int) -> tuple[int, int]:
    """(executions, compute_infer ns) of `model` at `batch` so far, from the statistics
    extension."""
    with urllib.request.urlopen(f"http://{http_url}/v2/models/{model}/stats", timeout=10) as r:
        document = json.load(r)
    for entry in document["model_stats"][0].get("batch_stats", []):
        if int(entry["batch_size"]) == batch:
            return int(entry["compute_infer"]["count"]), int(entry["compute_infer"]["ns"])
    return 0, 0


class Load:
    """The worker processes, spawned once and reused by every cell."""

    def __init__(self, clients: int) -> None:
        self.clients = clients
        self.pool = ProcessPoolExecutor(clients, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=_ready)
        # A pool starts a process per submission while none is idle: all of them start now.
        for future in [self.pool.submit(os.getpid) for _ in range(clients)]:
            future.result()

    def close(self) -> None:
        self.pool.shutdown()

    def cell(self, server: ServerProcess, model: str, batch: int, width: int, protocol: str,
             concurrency: int, seconds: float, warmup: float) -> Cell:
        url = server.grpc_url if protocol == "grpc" else server.http_url
        workers = min(self.clients, concurrency)
        shares = [concurrency // workers + (i < concurrency % workers) for i in range(workers)]
        start = time.monotonic() + warmup + 0.2
        futures = [self.pool.submit(_worker, protocol, url, model, batch, width, share, start,
                                    seconds) for share in shares]
        time.sleep(max(0.0, start - time.monotonic()))
        before = _batch_compute(server.http_url, model, batch)
        parts = [future.result() for future in futures]
        after = _batch_compute(server.http_url, model, batch)
        latencies = np.array([t for part in parts for t in part["latencies"]]) * 1e6
        p50, p99 = np.percentile(latencies, [50, 99]) if len(latencies) else (np.nan, np.nan)
        executions = after[0] - before[0]
        return Cell(model, batch, protocol, concurrency, seconds, len(latencies),
                    sum(part["errors"] for part in parts), float(p50), float(p99),
                    sum(part["cpu_s"] for part in parts) / seconds,
                    (after[1] - before[1]) / executions / 1e3 if executions else float("nan"),
                    executions, [e for part in parts for e in part["first_error"]][:1])


# --- the suite -----------------------------------------------------------------------------


def _wait_model(server: ServerProcess, model: str, timeout: float) -> str | None:
    """None once `model` is ready, else why it is not (the repository index's reason)."""
    deadline = time.monotonic() + timeout
    url = f"http://{server.http_url}"
    while True:
        try:
            with urllib.request.urlopen(f"{url}/v2/models/{model}/ready", timeout=5) as r:
                if r.status == 200:
                    return None
        except OSError:
            pass
        request = urllib.request.Request(f"{url}/v2/repository/index", data=b"{}",
                                         method="POST")
        with urllib.request.urlopen(request, timeout=5) as r:
            entry = next((m for m in json.load(r) if m.get("name") == model), {})
        if entry.get("state") == "UNAVAILABLE" or time.monotonic() > deadline:
            return f"{model} is {entry.get('state', 'not in the repository')}: " \
                   f"{entry.get('reason', '')}"
        time.sleep(0.2)


def _check(server: ServerProcess, model: str, path: Path, device: str, width: int) -> str:
    """One request's answer against torch's own on `device`: the cells only check shapes."""
    import tritonclient.http as httpclient

    x = np.random.default_rng(7).standard_normal((3, width), dtype=np.float32)
    client = httpclient.InferenceServerClient(server.http_url)
    try:
        inputs = [httpclient.InferInput(INPUT, list(x.shape), "FP32")]
        inputs[0].set_data_from_numpy(x)
        served = client.infer(model, inputs).as_numpy(OUTPUT)
    finally:
        client.close()
    expected = direct_output(path, device, x)
    error = float(np.max(np.abs(served - expected)) / (np.max(np.abs(expected)) or 1.0))
    verdict = "matches" if error < 1e-3 else "DIFFERS from"
    return f"{model} {verdict} torch on {device} (max relative difference {error:.1e})"


def gpu_memory_used_mib() -> float | None:
    """GPU 0's used memory as NVML sees it, device-wide (None without NVML)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(0)).used / 2**20
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no driver, no nvidia-ml-py: the figure is left out
        return None


def device_facts(device: str) -> dict[str, Any]:
    import torch

    facts: dict[str, Any] = {"torch": torch.__version__, "device": device}
    if device.startswith("cuda"):
        index = torch.device(device).index or 0
        facts["gpu"] = torch.cuda.get_device_name(index)
        facts["cuda"] = torch.version.cuda
        facts["capability"] = ".".join(map(str, torch.cuda.get_device_capability(index)))
        try:
            import pynvml

            pynvml.nvmlInit()
            facts["driver"] = pynvml.nvmlSystemGetDriverVersion()
            pynvml.nvmlShutdown()
        except Exception as exc:  # a fact missing from the title, no more
            facts["driver"] = f"unknown ({exc})"
    else:
        facts["cpu_threads"] = torch.get_num_threads()
    facts["cpus"] = os.cpu_count()
    return facts


class Results:
    """Everything measured, written to `--out` after every step."""

    def __init__(self, out: Path | None, settings: dict[str, Any]) -> None:
        self.out = out
        self.document: dict[str, Any] = {"settings": settings, "facts": {}, "checks": [],
                                         "direct": [], "cells": [], "targets": []}

    def add(self, key: str, value: Any) -> None:
        self.document[key].append(asdict(value) if hasattr(value, "__dataclass_fields__")
                                  else value)
        self.save()

    def save(self) -> None:
        if self.out is not None:
            self.out.write_text(json.dumps(self.document, indent=1, default=float) + "\n")


def targets(cells: list[Cell], direct: dict[int, Direct], served_model: str,
            cpu_model: str | None) -> list[dict[str, Any]]:
    """Issue 29's three targets, one row per figure."""
    rows: list[dict[str, Any]] = []
    mine = [c for c in cells if c.model == served_model]
    for batch, d in sorted(direct.items()):
        at = [c for c in mine if c.batch == batch and c.executions]
        if at:
            compute = (sum(c.compute_us * c.executions for c in at)
                       / sum(c.executions for c in at))
            ratio = compute / d.forward_us
            rows.append({"target": f"server compute per batch / direct forward, batch {batch}",
                         "value": ratio, "goal": f"<= {COMPUTE_RATIO_MAX}",
                         "met": ratio <= COMPUTE_RATIO_MAX,
                         "detail": f"{compute:,.0f} us vs {d.forward_us:,.0f} us"})
    if MAX_BATCH in direct and (top := [c for c in mine if c.batch == MAX_BATCH]):
        best = max(top, key=lambda c: c.infer_per_s)
        share = best.infer_per_s / direct[MAX_BATCH].infer_per_s
        rows.append({"target": f"served / direct infer/s, batch {MAX_BATCH}", "value": share,
                     "goal": f">= {SERVED_SHARE_MIN:.0%}", "met": share >= SERVED_SHARE_MIN,
                     "detail": f"{best.infer_per_s:,.0f}/s ({best.protocol}, c={best.concurrency})"
                               f" vs {direct[MAX_BATCH].infer_per_s:,.0f}/s"})
    for cpu in (c for c in cells if cpu_model and c.model == cpu_model):
        gpu = next((c for c in mine if (c.batch, c.protocol, c.concurrency)
                    == (cpu.batch, cpu.protocol, cpu.concurrency)), None)
        if gpu is None or not cpu.infer_per_s:
            continue
        speedup = gpu.infer_per_s / cpu.infer_per_s
        rows.append({"target": f"KIND_GPU / KIND_CPU infer/s, batch {cpu.batch}, "
                               f"{cpu.protocol} c={cpu.concurrency}",
                     "value": speedup, "goal": f">= {GPU_OVER_CPU_MIN:.0f}x",
                     "met": speedup >= GPU_OVER_CPU_MIN,
                     "detail": f"{gpu.infer_per_s:,.0f}/s vs {cpu.infer_per_s:,.0f}/s"})
    return rows


def markdown(document: dict[str, Any]) -> str:
    facts, settings = document["facts"], document["settings"]
    where = (f"{facts.get('gpu')} (compute capability {facts.get('capability')}), driver "
             f"{facts.get('driver')}, torch {facts.get('torch')} (CUDA {facts.get('cuda')})"
             if "gpu" in facts else f"CPU ({facts.get('cpu_threads')} torch threads), torch "
                                    f"{facts.get('torch')}")
    lines = [f"### Tritium pytorch backend, MLP {settings['layers']} x Linear "
             f"{settings['width']} FP32, one instance, no dynamic batching: {where}", "",
             "| model | batch | protocol | conc. | infer/s | p50 (us) | p99 (us) "
             "| server compute per execution (us) | direct forward (us) | client CPU (cores) "
             "| errors |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    direct = {d["batch"]: d for d in document["direct"]}
    for c in document["cells"]:
        forward = direct.get(c["batch"], {}).get("forward_us", float("nan"))
        infer = c["requests"] * c["batch"] / c["seconds"]
        lines.append(f"| {c['model']} | {c['batch']} | {c['protocol']} | {c['concurrency']} | "
                     f"{infer:,.0f} | {c['p50_us']:,.0f} | {c['p99_us']:,.0f} | "
                     f"{c['compute_us']:,.0f} | {forward:,.0f} | {c['client_cpu']:.1f} | "
                     f"{c['errors']} |")
    lines += ["", f"Direct: torch on {facts.get('device')}, same TorchScript file, one forward "
              "at a time", "",
              "| batch | forward, inputs on the device (us, median) | mean (us) | infer/s "
              "| host in, host out (us, median) |", "|---:|---:|---:|---:|---:|"]
    for d in document["direct"]:
        lines.append(f"| {d['batch']} | {d['forward_us']:,.1f} | {d['forward_mean_us']:,.1f} | "
                     f"{d['batch'] * 1e6 / d['forward_us']:,.0f} | {d['roundtrip_us']:,.1f} |")
    if document["targets"]:
        lines += ["", "| target | value | goal | met | detail |", "|---|---:|---|---|---|"]
        for t in document["targets"]:
            lines.append(f"| {t['target']} | {t['value']:.2f} | {t['goal']} | "
                         f"{'yes' if t['met'] else 'NO'} | {t['detail']} |")
    notes = [*document["checks"]]
    errors = [f"{c['model']} batch {c['batch']} {c['protocol']} c={c['concurrency']}: "
              f"{c['first_error'][0]}" for c in document["cells"] if c["first_error"]]
    notes += errors
    if notes:
        lines += [""] + [f"- {note}" for note in notes]
    lines += ["", f"({settings['seconds']} s per cell after {settings['warmup']} s of warm-up; "
              f"load from {settings['clients']} Python client processes, tritonclient aio)"]
    return "\n".join(lines)


def gpu_suite(args: argparse.Namespace) -> str:
    import torch

    device = "cpu" if args.device == "cpu" else "cuda:0"
    if device != "cpu" and not torch.cuda.is_available():
        raise SystemExit("gpu_bench: torch sees no CUDA GPU here; `--device cpu` runs the suite "
                         "on the CPU")
    served = "mlp_cpu" if device == "cpu" else "mlp_gpu"
    kinds = ["cpu"] if device == "cpu" else ["gpu", "cpu"]
    settings = {k: v for k, v in vars(args).items() if k not in ("out", "markdown")}
    results = Results(args.out, settings)
    # Spawned before this process touches CUDA (spawn copies no CUDA context anyway).
    load = Load(args.clients)
    try:
        with tempfile.TemporaryDirectory(prefix="gpu-bench-") as tmp:
            path = write_repository(Path(tmp), args.width, args.layers, kinds)
            results.document["facts"] = device_facts(device)
            direct: dict[int, Direct] = {}
            for batch in args.batches:
                direct[batch] = direct_forward(path, device, batch, args.width,
                                               args.direct_seconds)
                print(f"direct batch {batch}: {direct[batch].forward_us:,.1f} us per forward, "
                      f"{direct[batch].infer_per_s:,.0f} infer/s", flush=True)
                results.add("direct", direct[batch])
            cells = _serve(args, load, results, Path(tmp), path, device, served)
            results.document["targets"] = targets(cells, direct, served,
                                                  "mlp_cpu" if served != "mlp_cpu" else None)
            results.save()
    finally:
        load.close()
    text = markdown(results.document)
    if args.markdown is not None:
        args.markdown.write_text(text + "\n")
    return text


def _serve(args: argparse.Namespace, load: Load, results: Results, repo: Path, path: Path,
           device: str, served: str) -> list[Cell]:
    cells: list[Cell] = []
    server = ServerProcess([repo], "--exit-on-error=false", "--strict-readiness=false")
    # What the server adds to the GPU's memory tells whether mlp_gpu really went there.
    memory_before = gpu_memory_used_mib() if device != "cpu" else None
    server.start(timeout=args.load_timeout)
    try:
        plan = [(served, batch, protocol, concurrency) for batch in args.batches
                for protocol in args.protocols for concurrency in args.concurrency]
        if served != "mlp_cpu":
            plan += [("mlp_cpu", MAX_BATCH, protocol, concurrency)
                     for protocol in args.protocols for concurrency in args.cpu_concurrency]
        for model in dict.fromkeys(m for m, *_ in plan):
            problem = _wait_model(server, model, args.load_timeout)
            if problem is not None:
                print(f"gpu_bench: {problem}", flush=True)
                results.add("checks", problem)
                plan = [p for p in plan if p[0] != model]
                continue
            model_device = device if model == served else "cpu"
            check = _check(server, model, path, model_device, args.width)
            print(check, flush=True)
            results.add("checks", check)
        if memory_before is not None and (memory_after := gpu_memory_used_mib()) is not None:
            note = (f"the server's models and CUDA context take {memory_after - memory_before:,.0f}"
                    " MiB of GPU 0 (NVML, used memory before its start and after loading)")
            print(note, flush=True)
            results.add("checks", note)
        for model, batch, protocol, concurrency in plan:
            cell = load.cell(server, model, batch, args.width, protocol, concurrency,
                             args.seconds, args.warmup)
            print(f"{model} batch {batch} {protocol} c={concurrency}: "
                  f"{cell.infer_per_s:,.0f} infer/s, p50 {cell.p50_us:,.0f} us, compute "
                  f"{cell.compute_us:,.0f} us/exec, client CPU {cell.client_cpu:.1f}, "
                  f"errors {cell.errors}", flush=True)
            cells.append(cell)
            results.add("cells", cell)
    finally:
        server.stop()
    return cells


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8, 64],
                        help=f"at most {MAX_BATCH}; the target figures need {MAX_BATCH}")
    parser.add_argument("--protocols", nargs="+", choices=["http", "grpc"],
                        default=["http", "grpc"])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--cpu-concurrency", type=int, nargs="+", default=[1, 8],
                        help="the KIND_CPU cells' (batch 64)")
    parser.add_argument("--seconds", type=float, default=3.0, help="measured time per cell")
    parser.add_argument("--warmup", type=float, default=1.0, help="warm-up before each cell")
    parser.add_argument("--direct-seconds", type=float, default=2.0,
                        help="time spent timing the direct forward per batch size")
    parser.add_argument("--clients", type=int, default=min(4, os.cpu_count() or 1),
                        help="load generator processes")
    parser.add_argument("--load-timeout", type=float, default=120.0,
                        help="seconds to wait for a model to become ready")
    parser.add_argument("--out", type=Path, help="write the results as JSON")
    parser.add_argument("--markdown", type=Path, help="write the tables as Markdown")
    args = parser.parse_args(argv)
    if max(args.batches) > MAX_BATCH or min(args.batches) < 1:
        parser.error(f"--batches must lie in 1..{MAX_BATCH} (the model's max_batch_size)")
    return args


def main(argv: list[str] | None = None) -> int:
    print("\n" + gpu_suite(arguments(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
