"""The `ray` suite: model instances placed on a Ray cluster (`--ray-address`).

A simulated cluster on this machine: a head node with no CPUs for actors, and two worker nodes
of 4 logical CPUs each, node A's processes pinned to core 0 and node B's to core 1, so "one
node" and "two nodes" really mean one core and two. Measured:

- scale-out: a CPU-bound Python model (about 20 ms of single-threaded numpy work per request),
  two instances on node A versus one on node A and one on node B, the same closed-loop load
  (HTTP, concurrency 8): inferences/s, p50/p99, the ratio, and the share of one core the
  Tritium server process itself used meanwhile (its front end and the Ray hop);
- the per-request cost of the Ray hop: add_sub served locally versus from one actor, at
  concurrency 1;
- start-up: the cluster's, the time to load a model whose instance is a new actor, and the
  memory (RSS) of an instance's actor process and of its Python stub.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
from loadgen import Result, machine_load, run_load

from support import PYTHON_MODELS
from support.models import write_model
from support.ray_placement import ray_parameter
from support.server_process import ServerProcess

ADD_SUB = PYTHON_MODELS / "repo" / "add_sub"
SINGLE_THREAD = {"env_vars": {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}}

CPU20 = '''
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.matrix = np.random.default_rng(0).random((96, 96))

    def execute(self, requests):
        responses = []
        for request in requests:
            start = time.process_time()
            value = self.matrix
            while time.process_time() - start < 0.020:  # 20 ms of this process's CPU
                value = np.tanh(value @ self.matrix)
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", x * 2)]))
        return responses
'''


def _node(name: str) -> dict:
    return {"num_cpus": 1, "resources": {name: 1}, "runtime_env": SINGLE_THREAD}


def _cpu20(name: str, groups: list[tuple[str, str]]) -> str:
    group_text = ", ".join(f'{{ name: "{g}" kind: KIND_CPU count: 1 }}' for g, _ in groups)
    return (f'name: "{name}"\nbackend: "python"\nmax_batch_size: 0\n'
            'input [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
            'output [ { name: "Y" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
            f"instance_group [ {group_text} ]\n"
            + "".join(ray_parameter(_node(node), f"ray:{g}") for g, node in groups))


def _repository(repo: Path) -> None:
    write_model(repo, "cpu20_one_node", _cpu20("cpu20_one_node", [("a0", "node_a"),
                                                                  ("a1", "node_a")]),
                files={"1/model.py": CPU20})
    write_model(repo, "cpu20_two_nodes", _cpu20("cpu20_two_nodes", [("a0", "node_a"),
                                                                    ("b0", "node_b")]),
                files={"1/model.py": CPU20})
    light = {"num_cpus": 0.01, "resources": {"node_a": 0.01}}
    for name, extra in (("add_sub_local", ""), ("add_sub_ray", ray_parameter(light))):
        shutil.copytree(ADD_SUB, repo / name)
        config = repo / name / "config.pbtxt"
        config.write_text(config.read_text().replace('"add_sub"', f'"{name}"') + extra)


def _cluster():
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    everything = os.sched_getaffinity(0)
    try:
        for core, name in ((0, "node_a"), (1 % os.cpu_count(), "node_b")):
            os.sched_setaffinity(0, {core})  # the node's raylet and workers inherit it
            cluster.add_node(num_cpus=4, resources={name: 4})
    finally:
        os.sched_setaffinity(0, everything)
    cluster.wait_for_nodes()
    return cluster


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found += [int(child) for child in text]
    return found


def _load(server: ServerProcess, model: str) -> float:
    start = time.perf_counter()
    request = urllib.request.Request(
        f"http://{server.http_url}/v2/repository/models/{model}/load", data=b"", method="POST")
    try:
        with urllib.request.urlopen(request, timeout=300):
            pass
    except urllib.error.HTTPError as exc:
        raise RuntimeError(f"loading {model} failed: {exc.read().decode()}") from None
    return time.perf_counter() - start


def _cell(server: ServerProcess, model: str, concurrency: int, seconds: int,
          inputs: list, outputs: list[str]) -> tuple[Result, float]:
    pid = server.process.pid  # type: ignore[union-attr]
    before = _cpu_seconds(pid)
    result = run_load("http", "127.0.0.1", server.http_port, model, concurrency, seconds,
                      inputs, outputs)
    # warm-up and measured run both count: the share is per second of either
    share = (_cpu_seconds(pid) - before) / (seconds + 1)
    return result, share


def ray_suite(seconds: int) -> str:
    pinned = os.sched_getaffinity(0)
    os.sched_setaffinity(0, range(os.cpu_count() or 1))  # this suite places processes itself
    try:
        return _suite(seconds)
    finally:
        os.sched_setaffinity(0, pinned)


def _suite(seconds: int) -> str:
    started = time.perf_counter()
    cluster = _cluster()
    cluster_s = time.perf_counter() - started
    repo = Path(tempfile.mkdtemp(prefix="tritium-ray-bench-"))
    _repository(repo)
    server = ServerProcess([repo], f"--ray-address={cluster.address}",
                           "--model-control-mode=explicit", "--load-model=add_sub_local")
    try:
        server.start(timeout=300)
        load_s = _load(server, "add_sub_ray")
        import ray

        ray.init(address=cluster.address, namespace="tritium-bench")
        (name,) = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                   if "/add_sub_ray/" in a["name"]]
        actor_pid = ray.get(ray.get_actor(name, namespace="tritium").where.remote())[1]
        actor_mb = _rss_mb(actor_pid)
        stub_mb = sum(_rss_mb(child) for child in _children(actor_pid))
        ray.shutdown()
        for model in ("cpu20_one_node", "cpu20_two_nodes"):
            _load(server, model)
        x = [("X", np.ones(4, np.float32))]
        one, one_share = _cell(server, "cpu20_one_node", 8, seconds, x, ["Y"])
        two, two_share = _cell(server, "cpu20_two_nodes", 8, seconds, x, ["Y"])
        add_sub = [("INPUT0", np.ones(4, np.float32)), ("INPUT1", np.ones(4, np.float32))]
        local, _ = _cell(server, "add_sub_local", 1, seconds, add_sub, ["OUTPUT0", "OUTPUT1"])
        remote, _ = _cell(server, "add_sub_ray", 1, seconds, add_sub, ["OUTPUT0", "OUTPUT1"])
    finally:
        server.stop()
        cluster.shutdown()
        shutil.rmtree(repo, ignore_errors=True)

    def row(label: str, r: Result, share: float | None = None) -> str:
        cpu = "" if share is None else f"{share:.0%}"
        return (f"| {label} | {r.concurrency} | {r.throughput:,.1f} | {r.p50_us / 1000:,.2f} | "
                f"{r.p99_us / 1000:,.2f} | {r.errors} | {cpu} |")

    ratio = two.throughput / one.throughput if one.throughput else float("nan")
    hop_ms = (remote.p50_us - local.p50_us) / 1000
    rows = [
        f"### Ray placement ({machine_load()})", "",
        "| model, placement | conc. | infer/s | p50 (ms) | p99 (ms) | errors "
        "| Tritium process CPU (of one core) |",
        "|---|---:|---:|---:|---:|---:|---:|",
        row("20 ms CPU model, 2 instances on node A (1 core)", one, one_share),
        row("20 ms CPU model, 1 instance on node A + 1 on node B (2 cores)", two, two_share),
        row("add_sub, local instance", local),
        row("add_sub, instance on Ray (node A)", remote),
        "",
        f"- two nodes / one node: {ratio:.2f}x (ideal 2x: the two cores also run the server "
        "and the load generator)",
        f"- the Ray hop costs {hop_ms:.2f} ms per request at p50 (add_sub on Ray vs local)",
        f"- start-up: simulated cluster (head + 2 nodes) {cluster_s:.1f} s; loading add_sub "
        f"with its instance as a new actor {load_s:.1f} s",
        f"- memory per instance on Ray: actor process {actor_mb:.0f} MB RSS + Python stub "
        f"{stub_mb:.0f} MB",
        "- this suite pins the Ray nodes (A: core 0, B: core 1), not the server or wrk",
    ]
    return "\n".join(rows)
