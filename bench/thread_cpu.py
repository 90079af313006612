"""CPU time and context switches per inference, thread by thread, of a Tritium server and its
stubs under load: where a request's cost sits (event loop, instance threads, stubs) and how often
each thread sleeps (voluntary switches) or is preempted (involuntary) per request.

    PYTHONPATH=src python bench/thread_cpu.py --model add_sub --protocol http --concurrency 8

`--triton` measures the reference Triton 2.51 the same way (its threads named as the kernel
names them), to put a stage's cost beside its counterpart's.

The server runs pinned to core 0 and the load generator to core 1, as in `bench.py`. Read from
/proc (utime, stime, voluntary_ctxt_switches, nonvoluntary_ctxt_switches of every task).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from bench import (  # noqa: E402
    CLIENT_CORE,
    SERVER_CORE,
    TritonProcess,
    _python_models,
    add_load_arguments,
)
from loadgen import run_load  # noqa: E402
from server_cpu import descendants  # noqa: E402

from support.server_process import ServerProcess  # noqa: E402

Sample = dict[tuple[int, int], tuple[int, int, int, int]]


def _read_tasks(pids: list[int], *names: str) -> dict[tuple[int, int], list[str]]:
    """(pid, tid) -> the text of the named /proc files of each thread of `pids` (threads gone
    while read are left out)."""
    tasks = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                tasks[(pid, int(tid))] = [Path(f"/proc/{pid}/task/{tid}/{name}").read_text()
                                          for name in names]
            except OSError:
                continue
    return tasks


def sample(pids: list[int]) -> Sample:
    """(pid, tid) -> (utime, stime in clock ticks, voluntary, involuntary switches)."""
    tasks: Sample = {}
    for key, (stat, status) in _read_tasks(pids, "stat", "status").items():
        fields = stat[stat.rindex(")") + 2:].split()
        switches = {line.split(":")[0]: int(line.split()[1])
                    for line in status.splitlines() if "ctxt_switches" in line}
        tasks[key] = (int(fields[11]), int(fields[12]), switches["voluntary_ctxt_switches"],
                      switches["nonvoluntary_ctxt_switches"])
    return tasks


def thread_names(pids: list[int]) -> dict[tuple[int, int], str]:
    """(pid, tid) -> the thread's name (its `comm`)."""
    return {key: comm.strip() for key, (comm,) in _read_tasks(pids, "comm").items()}


def report(before: Sample, after: Sample, server_pid: int, inferences: float,
           names: dict[tuple[int, int], str]) -> str:
    tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
    rows = []
    total = 0.0
    for key, (user, system, voluntary, involuntary) in after.items():
        user0, system0, voluntary0, involuntary0 = before.get(key, (0, 0, 0, 0))
        cpu = (user - user0 + system - system0) * tick_us / inferences
        if not cpu:
            continue
        total += cpu
        pid, tid = key
        who = ("server, event loop" if tid == server_pid else
               "server, other thread" if pid == server_pid else f"stub {pid}")
        who += f" ({names.get(key, '?')})"
        rows.append((cpu, f"| {who} | {tid} | {cpu:.1f} | "
                          f"{(user - user0) * tick_us / inferences:.1f} | "
                          f"{(system - system0) * tick_us / inferences:.1f} | "
                          f"{(voluntary - voluntary0) / inferences:.2f} | "
                          f"{(involuntary - involuntary0) / inferences:.2f} |"))
    lines = ["| task | tid | CPU us/infer | user | system | sleeps/infer | preempted/infer |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    lines += [row for _, row in sorted(rows, reverse=True)]
    lines.append(f"| total | | {total:.1f} | | | | |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_load_arguments(parser, seconds=5)
    parser.add_argument("--triton", action="store_true", help="measure the reference Triton")
    args = parser.parse_args()
    server_class = TritonProcess if args.triton else ServerProcess
    inputs, outputs, _ = _python_models()[args.model]
    client_pin = ["taskset", "-c", str(CLIENT_CORE)]
    with server_class([HERE / "models"], prefix=["taskset", "-c", SERVER_CORE]) as server:
        assert server.process is not None
        port = server.http_port if args.protocol == "http" else server.grpc_port
        run_load(args.protocol, "127.0.0.1", port, args.model, args.concurrency, 1, inputs,
                 outputs, warmup=0, prefix=client_pin)
        pids = [server.process.pid, *descendants(server.process.pid)]
        before = sample(pids)
        result = run_load(args.protocol, "127.0.0.1", port, args.model, args.concurrency,
                          args.seconds, inputs, outputs, warmup=0, prefix=client_pin)
        after = sample(pids)
        names = thread_names(pids)
    inferences = result.throughput * args.seconds
    print(f"{args.model} over {args.protocol}, concurrency {args.concurrency}: "
          f"{result.throughput:,.0f} infer/s, p50 {result.p50_us:,.0f} us, "
          f"p99 {result.p99_us:,.0f} us\n")
    print(report(before, after, server.process.pid, inferences, names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
