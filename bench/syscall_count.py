"""System calls per inference of Tritium's server and its stubs (`strace -c -f`).

On a machine other work loads, infer/s and even CPU time per inference move by tens of per cent
from run to run; the system calls a request costs do not. Each is a kernel entry (and, in a
VM, often an exit to the hypervisor), and the hand-offs between the event loop, threads and
stub processes show up as epoll_pwait / futex / eventfd reads and writes. This counts them for
sequential requests (concurrency 1) on the python suite's models:

    PYTHONPATH=src python bench/syscall_count.py --model add_sub --protocol http

Needs `strace` (Debian: `apt-get install strace`).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
from server_cpu import descendants  # noqa: E402

from support.server_process import ServerProcess  # noqa: E402

_INPUTS = {"add_sub": ["INPUT0", "INPUT1"], "identity_fp32": ["INPUT0"]}


def count(model: str, protocol: str, requests: int) -> tuple[float, dict[str, float]]:
    """(system calls per inference, per call name) over `requests` sequential inferences."""
    if protocol == "http":
        import tritonclient.http as client_module
    else:
        import tritonclient.grpc as client_module  # type: ignore[no-redef]
    with tempfile.TemporaryDirectory() as tmp, ServerProcess([HERE / "models"]) as server:
        port = server.http_port if protocol == "http" else server.grpc_port
        client = client_module.InferenceServerClient(f"127.0.0.1:{port}")
        inputs = []
        for name in _INPUTS[model]:
            tensor = client_module.InferInput(name, [1, 16], "FP32")
            tensor.set_data_from_numpy(np.ones((1, 16), np.float32))
            inputs.append(tensor)
        for _ in range(50):  # warm up: stubs started, first-use paths taken
            client.infer(model, inputs)
        assert server.process is not None
        report = Path(tmp) / "strace.txt"
        command = ["strace", "-c", "-f", "-o", str(report)]
        for pid in descendants(server.process.pid):
            command += ["-p", str(pid)]
        tracer = subprocess.Popen(command, stderr=subprocess.DEVNULL)
        time.sleep(1.5)  # strace attaches to every thread
        for _ in range(requests):
            client.infer(model, inputs)
        time.sleep(0.3)
        tracer.send_signal(signal.SIGINT)
        tracer.wait()
        text = report.read_text()
    calls: dict[str, float] = {}
    for line in text.splitlines():
        fields = line.split()
        # "% time  seconds  usecs/call  calls  [errors]  syscall"; the "total" row is skipped.
        if len(fields) >= 5 and fields[0][0].isdigit() and fields[-1] != "total":
            calls[fields[-1]] = int(fields[3]) / requests
    return sum(calls.values()), calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="add_sub", choices=sorted(_INPUTS))
    parser.add_argument("--protocol", default="http", choices=["http", "grpc"])
    parser.add_argument("--requests", type=int, default=400)
    args = parser.parse_args()
    if shutil.which("strace") is None:
        print("strace is not installed (apt-get install strace)", file=sys.stderr)
        return 1
    total, calls = count(args.model, args.protocol, args.requests)
    print(f"{args.model} over {args.protocol}: {total:.1f} system calls per inference")
    for name, per in sorted(calls.items(), key=lambda item: -item[1]):
        if per >= 0.05:
            print(f"- {name}: {per:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
