"""Running `tritium serve`: load models, start the frontends, stop gracefully on a signal.

Shutdown order follows tritonserver: stop accepting connections and let in-flight requests finish
(up to --exit-timeout-secs), then finalize instances, models and backends.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from typing import Protocol

from .errors import TritonError
from .frontend.grpc import GrpcFrontend
from .frontend.http import HttpFrontend
from .frontend.metrics import MetricsFrontend
from .server import InferenceServer, ServerOptions

log = logging.getLogger("tritium")


class Frontend(Protocol):
    description: str

    async def start(self) -> None: ...

    async def stop(self, grace: float) -> None: ...


def model_table(server: InferenceServer) -> str:
    """The table tritonserver prints after loading: model, version, status or its error."""
    rows = [("Model", "Version", "Status")]
    for name, versions in sorted(server.model_states().items()):
        for version, status in sorted(versions.items()):
            text = status.state.value
            if status.reason and status.state.value == "UNAVAILABLE":
                text = f"UNAVAILABLE: {status.reason}"
            rows.append((name, str(version) if version >= 0 else "-", text))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    lines = [rule]
    for index, row in enumerate(rows):
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
        if index == 0:
            lines.append(rule)
    lines.append(rule)
    return "\n".join(lines)


async def run(options: ServerOptions, args: argparse.Namespace) -> int:
    loop = asyncio.get_running_loop()
    try:
        server = InferenceServer(options)  # refuses a bad --cache-config, for one
    except TritonError as exc:
        print(f"error: creating server: {exc.code.name} - {exc}", file=sys.stderr, flush=True)
        return 1
    try:
        await loop.run_in_executor(None, server.start)
    except TritonError as exc:
        print(model_table(server), file=sys.stderr, flush=True)
        print(f"error: creating server: {exc.code.name} - {exc}", file=sys.stderr, flush=True)
        await loop.run_in_executor(None, server.shutdown)
        return 1
    print(model_table(server), file=sys.stderr, flush=True)

    frontends: list[Frontend] = []
    if args.allow_grpc:
        frontends.append(GrpcFrontend(server, args.grpc_address, args.grpc_port,
                                      args.grpc_restrictions, args.grpc_options))
    if args.allow_http:
        frontends.append(HttpFrontend(server, args.http_address, args.http_port,
                                      args.http_restrictions, args.http_max_input_size))
    if args.allow_metrics:
        address = args.metrics_address or args.http_address
        frontends.append(MetricsFrontend(server, address, args.metrics_port))
    try:
        for frontend in frontends:
            await frontend.start()
            log.info("Started %s", frontend.description)
    except OSError as exc:
        print(f"error: creating server: {exc}", file=sys.stderr, flush=True)
        await _stop(server, frontends, 0.0)
        return 1

    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("Signal received, stopping (waiting up to %ss for in-flight requests)",
             options.exit_timeout_secs)
    await _stop(server, frontends, options.exit_timeout_secs)
    return 0


async def _stop(server: InferenceServer, frontends: list[Frontend], grace: float) -> None:
    await asyncio.gather(*(f.stop(grace) for f in frontends), return_exceptions=True)
    await asyncio.get_running_loop().run_in_executor(None, server.shutdown)
