"""`make bench`: Tritium on a repository of identity models, over HTTP and gRPC.

Prints (and writes to bench/results.md) inferences/s and p50/p99 latency at concurrency 1, 8
and 32. The numbers are for this machine (2 cores shared by server and load generator).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from loadgen import Result, run_load  # noqa: E402
from models import identity_config, write_model  # noqa: E402
from server_process import ServerProcess  # noqa: E402


def table(results: list[Result], title: str) -> str:
    lines = [
        f"### {title}",
        "",
        "| protocol | concurrency | infer/s | p50 (us) | p99 (us) | errors |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.protocol} | {r.concurrency} | {r.throughput:,.0f} | {r.percentile(50):,.0f} "
            f"| {r.percentile(99):,.0f} | {r.errors} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0, help="measured time per cell")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--output", type=Path, default=HERE / "results.md")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        write_model(repo, "identity_fp32", identity_config(
            "identity_fp32", dims="[ 16 ]", extra="instance_group [ { kind: KIND_CPU count: 2 } ]"))
        results: list[Result] = []
        with ServerProcess([repo]) as server:
            for protocol, port in (("http", server.http_port), ("grpc", server.grpc_port)):
                for concurrency in args.concurrency:
                    result = asyncio.run(run_load(
                        protocol, "127.0.0.1", port, "identity_fp32", concurrency, args.seconds))
                    print(f"{protocol} c={concurrency}: {result.throughput:,.0f} infer/s", flush=True)
                    results.append(result)
    text = table(results, "Tritium, identity model (FP32 [1,16]), 2 instances")
    print("\n" + text)
    args.output.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
