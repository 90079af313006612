"""Memory growth under sustained load, the way Triton's L0_memory_growth,
L0_client_memory_growth and L0_long_running_stress look at Triton: load runs for a while, and
the server's memory must stop growing.

Triton reads its one process with valgrind massif; a Tritium server is a Python process and one
stub process per Python model instance, so this reads the resident set size (/proc) of the
server and of every process under it, sampled through the run. After a warm-up (allocator
arenas, caches, pools reach their working size) the run is split in halves and what each
scenario reports is:

- RSS at the start of the measured run and at its end (server + stubs, MiB);
- growth per 100k requests over the second half (the tail is what must be flat: the first
  half may still be filling pools), from a least-squares line through the samples.

Scenarios (`--scenario NAME`, repeatable; all by default):
  http-python, grpc-python     perf_analyzer on a Python identity model
  http-onnx, grpc-onnx         perf_analyzer on an ONNX add/sub model
  grpc-stream-decoupled        perf_analyzer --streaming on a decoupled Python model
  shm-system                   perf_analyzer with system shared memory inputs and outputs
  ensemble                     ONNX add/sub then a Python identity, as one ensemble
  dynamic-batching             a Python identity with dynamic_batching at concurrency 16
  sequence                     many short sequences (2 requests, new correlation id each)
  bls                          a Python model calling another through BLS
  cancel                       HTTP clients that close the connection mid-request (slow model)
  cancel-grpc                  gRPC calls whose deadline passes while the slow model runs
  load-unload                  explicit model control: load, infer, unload, over and over
  connections                  a new HTTP connection and a new gRPC channel per request

perf_analyzer comes from $PERF_ANALYZER or PATH; the scenarios that need it are skipped without
it. Results print as a Markdown table; `--json` writes the numbers too.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
from server_cpu import descendants, rss_kib  # noqa: E402

from support import onnx_models  # noqa: E402
from support.models import write_model  # noqa: E402
from support.server_process import ServerProcess  # noqa: E402

PY_IDENTITY = '''
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())])
            for r in requests]
'''

SLOW = '''
import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        time.sleep(0.05)
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())])
            for r in requests]
'''

BLS = '''
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            inner = pb_utils.InferenceRequest(
                model_name="py_identity",
                inputs=[pb_utils.get_input_tensor_by_name(request, "INPUT0")],
                requested_output_names=["OUTPUT0"])
            answer = inner.exec()
            if answer.has_error():
                raise pb_utils.TritonModelException(answer.error().message())
            responses.append(pb_utils.InferenceResponse(answer.output_tensors()))
        return responses
'''

DECOUPLED = '''
import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            sender = request.get_response_sender()
            for _ in range(3):
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", value)]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
'''

ACCUMULATOR = '''
import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """A running sum per correlation id: state the model keeps (and must drop at END)."""

    def initialize(self, args):
        self.sums = {}

    def execute(self, requests):
        responses = []
        for request in requests:
            corrid = int(request.correlation_id())
            start = pb_utils.get_input_tensor_by_name(request, "START").as_numpy()[0]
            end = pb_utils.get_input_tensor_by_name(request, "END").as_numpy()[0]
            value = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            total = (0 if start else self.sums.get(corrid, 0)) + int(value.sum())
            if end:
                self.sums.pop(corrid, None)
            else:
                self.sums[corrid] = total
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor("OUTPUT0", np.array([total], np.int32))]))
        return responses
'''


def _io(dtype: str, dims: str, count: int = 1) -> str:
    ios = [f'input {{ name: "INPUT{i}" data_type: {dtype} dims: {dims} }}' for i in range(count)]
    ios += [f'output {{ name: "OUTPUT{i}" data_type: {dtype} dims: {dims} }}'
            for i in range(count)]
    return "\n".join(ios)


def write_repository(repo: Path) -> Path:
    """Every scenario's models, in one repository."""
    fp32 = _io("TYPE_FP32", "[ 16 ]")
    write_model(repo, "py_identity", f'name: "py_identity"\nbackend: "python"\n'
                f"max_batch_size: 8\n{fp32}\n", files={"1/model.py": PY_IDENTITY})
    write_model(repo, "py_batching", f'name: "py_batching"\nbackend: "python"\n'
                f"max_batch_size: 16\n{fp32}\n"
                "dynamic_batching { max_queue_delay_microseconds: 500 }\n",
                files={"1/model.py": PY_IDENTITY})
    write_model(repo, "py_slow", f'name: "py_slow"\nbackend: "python"\nmax_batch_size: 8\n'
                f"{fp32}\ninstance_group [ {{ count: 2 kind: KIND_CPU }} ]\n",
                files={"1/model.py": SLOW})
    write_model(repo, "py_bls", f'name: "py_bls"\nbackend: "python"\nmax_batch_size: 8\n'
                f"{fp32}\n", files={"1/model.py": BLS})
    write_model(repo, "py_decoupled", f'name: "py_decoupled"\nbackend: "python"\n'
                f"max_batch_size: 0\nmodel_transaction_policy {{ decoupled: true }}\n{fp32}\n",
                files={"1/model.py": DECOUPLED})
    write_model(repo, "py_sequence", '''name: "py_sequence"
backend: "python"
max_batch_size: 4
sequence_batching {
  max_sequence_idle_microseconds: 5000000
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] } ] },
    { name: "END" control [ { kind: CONTROL_SEQUENCE_END int32_false_true: [0, 1] } ] }
  ]
}
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
''', files={"1/model.py": ACCUMULATOR})
    onnx_models.save(onnx_models.add_sub(width=16), repo / "onnx_add_sub" / "1" / "model.onnx")
    (repo / "onnx_add_sub" / "config.pbtxt").write_text(
        'name: "onnx_add_sub"\nbackend: "onnxruntime"\nmax_batch_size: 8\n'
        + _io("TYPE_FP32", "[ 16 ]", 2) + "\n")
    write_model(repo, "ensemble", '''name: "ensemble"
platform: "ensemble"
max_batch_size: 8
input [ { name: "A" data_type: TYPE_FP32 dims: [ 16 ] },
        { name: "B" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "SUM" data_type: TYPE_FP32 dims: [ 16 ] },
         { name: "DIFF" data_type: TYPE_FP32 dims: [ 16 ] } ]
ensemble_scheduling { step [
  { model_name: "onnx_add_sub" model_version: -1
    input_map { key: "INPUT0" value: "A" } input_map { key: "INPUT1" value: "B" }
    output_map { key: "OUTPUT0" value: "sum" } output_map { key: "OUTPUT1" value: "DIFF" } },
  { model_name: "py_identity" model_version: -1
    input_map { key: "INPUT0" value: "sum" } output_map { key: "OUTPUT0" value: "SUM" } }
] }
''')
    return repo


def _anon_kib(pid: int) -> int:
    """RssAnon: the process's own heap, not the shared-memory pages it maps (those are the
    stubs' fixed-size transfer buffers, counted once per process that touches them)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return 0


def tree_memory_mib(pid: int) -> tuple[float, float, float, float]:
    """(server RSS, stubs' RSS, server RssAnon, stubs' RssAnon) in MiB; the stubs are every
    process under the server."""
    sizes = [0, 0, 0, 0]
    for member in descendants(pid):
        try:
            rss, anon = rss_kib(member), _anon_kib(member)
        except OSError:
            continue
        offset = 0 if member == pid else 1
        sizes[offset] += rss
        sizes[2 + offset] += anon
    return sizes[0] / 1024, sizes[1] / 1024, sizes[2] / 1024, sizes[3] / 1024


@dataclass
class Sample:
    seconds: float
    requests: int
    server_mib: float
    stubs_mib: float
    server_anon_mib: float
    stubs_anon_mib: float


@dataclass
class Outcome:
    scenario: str
    requests: int = 0
    seconds: float = 0.0
    start_server_mib: float = 0.0
    start_stubs_mib: float = 0.0
    end_server_mib: float = 0.0
    end_stubs_mib: float = 0.0
    # RssAnon MiB per 100k requests (per 100 cycles) over the second half: server, stubs.
    tail_server: float = 0.0
    tail_stubs: float = 0.0
    note: str = ""
    samples: list[Sample] = field(default_factory=list)


def slope_per(samples: list[Sample], attribute: str, per: int) -> float:
    """Least-squares MiB per `per` requests (or cycles) through the samples."""
    if len(samples) < 3 or samples[-1].requests == samples[0].requests:
        return float("nan")
    x = np.array([s.requests for s in samples], float)
    y = np.array([getattr(s, attribute) for s in samples], float)
    return float(np.polyfit(x, y, 1)[0] * per)


class Counter:
    """Requests done, shared by a scenario's load threads and the sampler."""

    def __init__(self) -> None:
        self.value = 0
        self._lock = threading.Lock()

    def add(self, n: int = 1) -> None:
        with self._lock:
            self.value += n


# A scenario: (server, seconds, counter) -> runs load for that long, counting requests.
Load = Callable[[ServerProcess, float, Counter], None]


def perf_analyzer() -> str | None:
    return os.environ.get("PERF_ANALYZER") or shutil.which("perf_analyzer")


def pa_load(*arguments: str, chunk: int = 20_000, grpc: bool = False) -> Load:
    """perf_analyzer runs of `chunk` requests each (--request-count) until time is up."""

    def run(server: ServerProcess, seconds: float, counter: Counter) -> None:
        url = server.grpc_url if grpc or "grpc" in arguments else server.http_url
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            command = [perf_analyzer() or "perf_analyzer", "-u", url, "--request-count",
                       str(chunk), "--measurement-mode", "count_windows",
                       "--measurement-request-count", str(chunk), *arguments]
            done = subprocess.run(command, capture_output=True, text=True, check=False,
                                  timeout=max(60.0, seconds * 3))
            if done.returncode != 0:
                raise RuntimeError(f"perf_analyzer failed: {done.stdout[-2000:]}"
                                   f"{done.stderr[-2000:]}")
            counter.add(chunk)

    return run


def threads_load(worker: Callable[[ServerProcess, float, Counter], None],
                 count: int) -> Load:
    def run(server: ServerProcess, seconds: float, counter: Counter) -> None:
        threads = [threading.Thread(target=worker, args=(server, seconds, counter))
                   for _ in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    return run


def _infer_body() -> tuple[bytes, dict[str, str]]:
    data = np.arange(16, dtype=np.float32).reshape(1, 16)
    header = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 16],
                                     "parameters": {"binary_data_size": data.nbytes}}],
                         "outputs": [{"name": "OUTPUT0",
                                      "parameters": {"binary_data": True}}]}).encode()
    return header + data.tobytes(), {"Inference-Header-Content-Length": str(len(header)),
                                     "Content-Type": "application/octet-stream"}


def dropped_http(server: ServerProcess, seconds: float, counter: Counter) -> None:
    """Send a request to the slow model and close the socket before its answer."""
    body, headers = _infer_body()
    host, port = server.http_url.split(":")
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    raw = (f"POST /v2/models/py_slow/infer HTTP/1.1\r\nHost: {host}\r\n{head}"
           f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.create_connection((host, int(port))) as sock:
            sock.sendall(raw)
            time.sleep(0.01)
        counter.add()


def deadline_grpc(server: ServerProcess, seconds: float, counter: Counter) -> None:
    """gRPC calls whose 20 ms deadline passes while the slow model runs."""
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import InferenceServerException

    client = grpcclient.InferenceServerClient(server.grpc_url)
    value = grpcclient.InferInput("INPUT0", [1, 16], "FP32")
    value.set_data_from_numpy(np.zeros((1, 16), np.float32))
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            client.infer("py_slow", [value], client_timeout=0.02)
        except InferenceServerException:
            pass
        counter.add()
    client.close()


def new_connections(server: ServerProcess, seconds: float, counter: Counter) -> None:
    """One HTTP connection per request, and one gRPC channel per request."""
    import tritonclient.grpc as grpcclient

    body, headers = _infer_body()
    host, port = server.http_url.split(":")
    value = grpcclient.InferInput("INPUT0", [1, 16], "FP32")
    value.set_data_from_numpy(np.zeros((1, 16), np.float32))
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        connection = http.client.HTTPConnection(host, int(port))
        connection.request("POST", "/v2/models/py_identity/infer", body, headers)
        response = connection.getresponse()
        response.read()
        assert response.status == 200, response.status
        connection.close()
        client = grpcclient.InferenceServerClient(server.grpc_url)
        client.infer("py_identity", [value])
        client.close()
        counter.add(2)


def load_unload(server: ServerProcess, seconds: float, counter: Counter) -> None:
    """Load, infer once, unload: a Python model (a stub process each time) and an ONNX one."""
    import tritonclient.http as httpclient

    client = httpclient.InferenceServerClient(server.http_url)
    value = httpclient.InferInput("INPUT0", [1, 16], "FP32")
    value.set_data_from_numpy(np.zeros((1, 16), np.float32))
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        client.load_model("py_identity")
        client.infer("py_identity", [value])
        client.unload_model("py_identity")
        client.load_model("onnx_add_sub")
        client.unload_model("onnx_add_sub")
        counter.add()
    client.close()


@dataclass
class Scenario:
    name: str
    load: Load
    needs_pa: bool = True
    args: tuple[str, ...] = ()  # extra server flags
    explicit: bool = False  # --model-control-mode=explicit, nothing loaded at start
    unit: str = "requests"


def scenarios() -> list[Scenario]:
    shm = ("--shared-memory", "system", "--output-shared-memory-size", "256")
    return [
        Scenario("http-python", pa_load("-m", "py_identity", "-i", "http",
                                        "--concurrency-range", "4")),
        Scenario("grpc-python", pa_load("-m", "py_identity", "-i", "grpc",
                                        "--concurrency-range", "4")),
        Scenario("http-onnx", pa_load("-m", "onnx_add_sub", "-i", "http",
                                      "--concurrency-range", "4")),
        Scenario("grpc-onnx", pa_load("-m", "onnx_add_sub", "-i", "grpc",
                                      "--concurrency-range", "4")),
        Scenario("grpc-stream-decoupled", pa_load(
            "-m", "py_decoupled", "-i", "grpc", "--streaming", "--concurrency-range", "4")),
        Scenario("shm-system", pa_load("-m", "onnx_add_sub", "-i", "grpc",
                                       "--concurrency-range", "4", *shm),
                 args=("--allow-client-shm=true",)),
        Scenario("ensemble", pa_load("-m", "ensemble", "-i", "grpc",
                                     "--concurrency-range", "4")),
        Scenario("dynamic-batching", pa_load("-m", "py_batching", "-i", "grpc",
                                             "--concurrency-range", "16")),
        Scenario("sequence", pa_load("-m", "py_sequence", "-i", "grpc", "--sequence-length",
                                     "2", "--sequence-length-variation", "0",
                                     "--concurrency-range", "8", "--input-data", "zero")),
        Scenario("bls", pa_load("-m", "py_bls", "-i", "grpc", "--concurrency-range", "4")),
        Scenario("cancel", threads_load(dropped_http, 2),
                 needs_pa=False),
        Scenario("cancel-grpc", threads_load(deadline_grpc, 2), needs_pa=False),
        Scenario("load-unload", load_unload, needs_pa=False, explicit=True, unit="cycles"),
        Scenario("connections", threads_load(new_connections, 2), needs_pa=False),
    ]


def measure(scenario: Scenario, repo: Path, warmup: float, seconds: float,
            interval: float, server_args: list[str], prefix: list[str]) -> Outcome:
    args = [*scenario.args, *server_args]
    if scenario.explicit:
        args.append("--model-control-mode=explicit")
    outcome = Outcome(scenario.name)
    with ServerProcess([repo], *args, prefix=prefix) as server:
        assert server.process is not None
        pid = server.process.pid
        counter = Counter()
        scenario.load(server, warmup, counter)
        counter.value = 0
        begin = time.monotonic()
        samples: list[Sample] = []
        stop = threading.Event()

        def sample() -> None:
            while True:
                rss = tree_memory_mib(pid)
                samples.append(Sample(time.monotonic() - begin, counter.value, *rss))
                if stop.wait(interval):
                    rss = tree_memory_mib(pid)
                    samples.append(Sample(time.monotonic() - begin, counter.value, *rss))
                    return

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            scenario.load(server, seconds, counter)
        finally:
            stop.set()
            sampler.join()
    tail = [s for s in samples if s.seconds >= samples[-1].seconds / 2]
    outcome.samples = samples
    outcome.requests = counter.value
    outcome.seconds = samples[-1].seconds
    outcome.start_server_mib, outcome.start_stubs_mib = (samples[0].server_mib,
                                                         samples[0].stubs_mib)
    outcome.end_server_mib, outcome.end_stubs_mib = samples[-1].server_mib, samples[-1].stubs_mib
    per = 100_000 if scenario.unit == "requests" else 100
    outcome.tail_server = slope_per(tail, "server_anon_mib", per)
    outcome.tail_stubs = slope_per(tail, "stubs_anon_mib", per)
    if scenario.unit != "requests":
        outcome.note = f"counts are {scenario.unit}; growth per {per} {scenario.unit}"
    return outcome


def table(outcomes: list[Outcome]) -> str:
    lines = ["| scenario | requests | seconds | server MiB start -> end | stubs MiB start -> end "
             "| server heap MiB / 100k (2nd half) | stubs heap MiB / 100k (2nd half) | note |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for o in outcomes:
        lines.append(
            f"| {o.scenario} | {o.requests:,} | {o.seconds:.0f} | "
            f"{o.start_server_mib:.1f} -> {o.end_server_mib:.1f} | "
            f"{o.start_stubs_mib:.1f} -> {o.end_stubs_mib:.1f} | {o.tail_server:+.2f} | "
            f"{o.tail_stubs:+.2f} | {o.note} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", action="append", help="run only these (repeatable)")
    parser.add_argument("--seconds", type=float, default=300.0, help="measured time each")
    parser.add_argument("--warmup", type=float, default=30.0)
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between samples")
    parser.add_argument("--server-arg", action="append", default=[],
                        help="one more `tritium serve` flag (repeatable)")
    parser.add_argument("--pin", default="", help="taskset core list for the server")
    parser.add_argument("--json", type=Path, help="write every outcome and sample here")
    args = parser.parse_args(argv)
    chosen = [s for s in scenarios() if not args.scenario or s.name in args.scenario]
    prefix = ["taskset", "-c", args.pin] if args.pin else []
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="tritium-soak-") as tmp:
        repo = write_repository(Path(tmp) / "models")
        for scenario in chosen:
            if scenario.needs_pa and perf_analyzer() is None:
                outcomes.append(Outcome(scenario.name, note="skipped: no perf_analyzer"))
                continue
            outcome = measure(scenario, repo, args.warmup, args.seconds, args.interval,
                              args.server_arg, prefix)
            outcomes.append(outcome)
            print(table([outcome]).splitlines()[-1], flush=True)
    print(table(outcomes))
    if args.json:
        args.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
