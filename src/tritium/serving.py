"""Running `tritium serve`: load models, start the frontends, stop gracefully on a signal.

Shutdown order follows tritonserver: stop accepting connections and let in-flight requests finish
(up to --exit-timeout-secs), then finalize instances, models and backends.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import os
import signal
import sys
from typing import Protocol

from . import heap
from .errors import TritonError
from .frontend import busy_poll
from .frontend.grpc import GrpcFrontend
from .frontend.http import HttpFrontend
from .frontend.http.limits import HttpLimits
from .frontend.http.listen import bind
from .frontend.metrics import DEFAULT_PINNED_POOL_BYTES, MetricsFrontend
from .frontend.sagemaker import SageMakerFrontend
from .frontend.vertex_ai import VertexAiFrontend
from .server import InferenceServer, ServerOptions
from .startup_tables import RAW, log_tables, model_table
from .tritonserver_flags import metrics_settings

log = logging.getLogger("tritium")

# Where the SageMaker and Vertex AI endpoints listen (tritonserver has no flag for it).
CLOUD_ADDRESS = "0.0.0.0"


class Frontend(Protocol):
    description: str

    async def start(self) -> None: ...

    async def stop(self, grace: float) -> None: ...


def _creating_server_failed(exc: TritonError) -> None:
    """tritonserver's last line when the server cannot be made (main.cc's LOG_TRITONSERVER_ERROR:
    the code as Triton's Status names it, e.g. "Invalid argument")."""
    print(f"error: creating server: {exc.code.status_text} - {exc}", file=sys.stderr, flush=True)


async def run(options: ServerOptions, args: argparse.Namespace) -> int:
    loop = asyncio.get_running_loop()
    try:
        server = InferenceServer(options)  # refuses a bad --cache-config, for one
    except TritonError as exc:
        _creating_server_failed(exc)
        return 1
    try:
        frontends = build_frontends(server, args)  # refuses a bad --openai-tokenizer, for one
        check_ports(args)  # a port in use is reported before anything starts
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 1
    try:
        await loop.run_in_executor(None, server.start)
    except TritonError as exc:
        log.info("\n%s", model_table(server), extra=RAW)
        _creating_server_failed(exc)
        await loop.run_in_executor(None, server.shutdown)
        return 1
    # At INFO, as Triton logs them: with --log-file they are in the file.
    log_tables(server, log)

    busy_poll.install(loop, args.busy_poll_us)
    try:
        for frontend in frontends:
            await frontend.start()
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        await _stop(server, frontends, 0.0)
        return 1
    for frontend in frontends:
        log.info("Started %s", frontend.description)
    heap.settle()

    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("Signal received, stopping (waiting up to %ss for in-flight requests)",
             options.exit_timeout_secs)
    await _stop(server, frontends, options.exit_timeout_secs)
    return 0


def build_frontends(server: InferenceServer, args: argparse.Namespace) -> list[Frontend]:
    """The endpoints the flags ask for, in the order Triton starts them."""
    frontends: list[Frontend] = []
    if args.allow_grpc:
        frontends.append(GrpcFrontend(
            server, args.grpc_address, args.grpc_port, args.grpc_restrictions, args.grpc_options,
            header_forward=args.grpc_header_forward_pattern,
            compression_level=args.grpc_infer_response_compression_level,
            reuse_port=args.reuse_grpc_port))
    if args.allow_http:
        http = HttpFrontend(server, args.http_address, args.http_port,
                            args.http_restrictions, args.http_max_input_size)
        http.reuse_port = args.reuse_http_port
        http.limits = HttpLimits(args.http_max_header_size, args.http_max_url_size,
                                 args.http_header_timeout_secs, args.http_keepalive_timeout_secs)
        if args.http_header_forward_pattern is not None:
            http.forward_headers(args.http_header_forward_pattern)
        frontends.append(http)
    metrics = None
    if args.allow_metrics:
        address = args.metrics_address
        settings = metrics_settings(args)
        metrics = MetricsFrontend(
            server, address, args.metrics_port, interval_ms=args.metrics_interval_ms,
            allow_cpu_metrics=args.allow_cpu_metrics,
            counter_latencies=settings.get("counter_latencies", True),
            allow_gpu_metrics=args.allow_gpu_metrics,
            pinned_pool_bytes=(DEFAULT_PINNED_POOL_BYTES if args.pinned_memory_pool_byte_size
                               is None else args.pinned_memory_pool_byte_size))
    if args.allow_sagemaker:
        frontends.append(SageMakerFrontend(server, CLOUD_ADDRESS, args.sagemaker_port,
                                           args.http_max_input_size))
    if args.allow_vertex_ai:
        # Its `metrics` redirect serves the metrics port's text (none when metrics are off).
        frontends.append(VertexAiFrontend(
            server, CLOUD_ADDRESS, args.vertex_ai_port, args.vertex_ai_default_model,
            metrics.metrics.text if metrics is not None else None, args.http_max_input_size,
            args.http_restrictions))
    if args.openai_port is not None:
        from .frontend.openai import OpenAiFrontend

        frontends.append(OpenAiFrontend(
            server, args.openai_address or args.http_address, args.openai_port,
            args.openai_tokenizer, metrics.metrics.text if metrics is not None else None))
    if metrics is not None:
        frontends.append(metrics)
    return frontends


def check_ports(args: argparse.Namespace) -> None:
    """OSError naming the service and the socket, in Triton's words, if a port is taken."""
    endpoints = []
    if args.allow_grpc:
        endpoints.append(("GRPC", args.grpc_address, args.grpc_port, args.reuse_grpc_port))
    if args.allow_http:
        endpoints.append(("HTTP", args.http_address, args.http_port, args.reuse_http_port))
    if args.allow_sagemaker:
        endpoints.append(("Sagemaker", CLOUD_ADDRESS, args.sagemaker_port, False))
    if args.allow_vertex_ai:
        endpoints.append(("Vertex AI", CLOUD_ADDRESS, args.vertex_ai_port, False))
    if args.openai_port is not None:
        endpoints.append(("OpenAI", args.openai_address or args.http_address, args.openai_port,
                          False))
    if args.allow_metrics:
        endpoints.append(("Metrics", args.metrics_address,
                          args.metrics_port, False))
    for service, address, port, reuse in endpoints:
        if port == 0:
            continue
        try:
            bind(address, port, reuse).close()
        except OSError as exc:
            reason = "already in use" if exc.errno == errno.EADDRINUSE else exc.strerror
            raise OSError(f"failed to start {service} service: Unavailable - Socket "
                          f"'{address}:{port}' {reason}") from None


async def _stop(server: InferenceServer, frontends: list[Frontend], grace: float) -> None:
    """As Triton stops, all within --exit-timeout-secs (`grace`): the HTTP port takes no new
    connections and serves its open ones, the server fully up, until their clients close them;
    then new requests are refused while those in flight finish, the frontends still serving
    them (what is still queued at the timeout fails); then the frontends stop, and the models
    unload in what is left of the timeout."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    for frontend in frontends:
        if isinstance(frontend, HttpFrontend):
            await frontend.serve_open_connections(grace, "HTTP")
    left = max(grace - (loop.time() - started), 0.0)
    await loop.run_in_executor(None, server.drain, left)
    grace = max(grace - (loop.time() - started), 0.0)
    await asyncio.gather(*(f.stop(grace) for f in frontends), return_exceptions=True)
    try:
        await asyncio.get_running_loop().run_in_executor(None, server.shutdown)
    except TritonError as exc:
        # What is still running (an execution past the timeout, a finalize that hangs) may
        # hold threads an orderly exit would wait for: leave now, as tritonserver does. The
        # stubs and other helpers end when their sockets close with this process.
        log.error("failed to stop server: %s", exc)
        logging.shutdown()
        sys.stderr.flush()
        os._exit(1)
