"""Where a Tritium server's CPU goes under load: py-spy samples of the server (and its stubs)
while wrk or h2load drives one model, summarised as the top self and inclusive entries.

    python bench/profile_server.py --model add_sub --protocol http --concurrency 8

Profiles hold up when the machine is loaded by other work far better than throughput does,
because they are shares of the server's own samples. Needs `py-spy` (`pip install
tritium[bench]`, which `make bench` does) and wrk/h2load.
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from bench import _python_models, add_load_arguments  # noqa: E402
from loadgen import run_load  # noqa: E402

from support.server_process import ServerProcess  # noqa: E402


def summarise(collapsed: str, top: int) -> str:
    """py-spy's raw (collapsed) stacks -> Markdown lists of the top self and inclusive frames."""
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in collapsed.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [frame.split(" (")[0] + " (" + frame.split(" (")[1].split(":")[0].rsplit(
            "/", 1)[-1] + ")" if " (" in frame else frame for frame in stack.split(";")]
        # the first frame is the process (and thread) py-spy names with --subprocesses
        total += count
        own[frames[-1]] += count
        for frame in set(frames[1:]):
            inclusive[frame] += count
    if not total:
        return "no samples"
    lines = [f"{total} samples", "", "self:"]
    lines += [f"- {100 * n / total:4.1f} % {name}" for name, n in own.most_common(top)]
    lines += ["", "inclusive:"]
    lines += [f"- {100 * n / total:4.1f} % {name}" for name, n in inclusive.most_common(top)]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_load_arguments(parser, seconds=10)
    parser.add_argument("--gil", action="store_true", help="only samples holding the GIL")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--output", type=Path, help="keep the collapsed stacks here")
    args = parser.parse_args()
    inputs, outputs, _ = _python_models()[args.model]
    with tempfile.TemporaryDirectory() as tmp, ServerProcess([HERE / "models"]) as server:
        port = server.http_port if args.protocol == "http" else server.grpc_port
        run_load(args.protocol, "127.0.0.1", port, args.model, args.concurrency, 1, inputs,
                 outputs, warmup=0)
        raw = Path(tmp) / "profile.txt"
        assert server.process is not None
        spy_bin = Path(sys.executable).parent / "py-spy"
        command = [str(spy_bin) if spy_bin.exists() else "py-spy", "record",
                   "--pid", str(server.process.pid), "--subprocesses",
                   "--native", "--format", "raw", "--rate", "200",
                   "--duration", str(args.seconds), "--output", str(raw)]
        if args.gil:
            command.append("--gil")
        spy = threading.Thread(target=subprocess.run, args=(command,),
                               kwargs={"capture_output": True})
        spy.start()
        run_load(args.protocol, "127.0.0.1", port, args.model, args.concurrency,
                 args.seconds, inputs, outputs, warmup=0)
        spy.join()
        collapsed = raw.read_text() if raw.exists() else ""
        if args.output:
            args.output.write_text(collapsed)
    print(summarise(collapsed, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
