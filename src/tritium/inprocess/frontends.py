"""Frontends on demand for an in-process server, and what the API borrows from the frontends.

`Server.start_frontends(http_port=0, grpc_port=0, metrics_port=0)` serves the same
InferenceServer over Triton's HTTP and gRPC protocols (and Prometheus metrics) on an event loop
of its own, a daemon thread: the caller's code stays synchronous, or keeps its own loop. Port 0
picks a free port; the bound addresses come back. `stop()` stops them before the core, letting
requests in flight finish first, as `tritium serve` does.

This module is the API's one dependency on `tritium.frontend` (the frontends themselves, the
Prometheus families and the GPU and CPU pollers behind `Server.metrics()`, the statistics
extension's JSON form).
"""

from __future__ import annotations

import argparse
import asyncio
import threading
from dataclasses import dataclass
from typing import Any

from ..frontend.cpu_metrics import CpuMetrics
from ..frontend.extensions.header_forward import HeaderPattern
from ..frontend.extensions.statistics_api import statistics_json
from ..frontend.gpu_metrics import GpuMetrics
from ..frontend.grpc import GrpcFrontend
from ..frontend.http import HttpFrontend
from ..frontend.metrics import MetricsFrontend, ServerMetrics
from ..server import InferenceServer
from ..serving import build_frontends


@dataclass(frozen=True)
class FrontendAddresses:
    """Where the frontends listen ("host:port", the form tritonclient takes); None if off."""

    http: str | None = None
    grpc: str | None = None
    metrics: str | None = None

    @property
    def metrics_url(self) -> str | None:
        return f"http://{self.metrics}/metrics" if self.metrics else None


class Frontends:
    """The HTTP/gRPC/metrics frontends of one server, on an event-loop thread of their own."""

    def __init__(self, server: InferenceServer, metrics_settings: dict[str, Any]) -> None:
        self._server = server
        self._metrics_settings = metrics_settings  # MetricsFrontend's keyword arguments
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever,
                                        name="tritium-frontends", daemon=True)
        self._running: list[Any] = []
        # Header forward pattern (tritonfrontend's Options.header_forward_pattern) per frontend.
        self.header_forward: dict[str, HeaderPattern] = {}
        # GrpcFrontend's keyword arguments (tritonfrontend's KServeGrpc.Options).
        self.grpc_settings: dict[str, Any] = {}

    def start(self, address: str, http_port: int | None, grpc_port: int | None,
              metrics_port: int | None) -> FrontendAddresses:
        """Start the frontends whose port is not None; OSError if a port cannot be bound."""
        built = [(key, make(self._server, address, port)) for key, port, make in (
            ("http", http_port, HttpFrontend),
            ("grpc", grpc_port, self._grpc_frontend),
            ("metrics", metrics_port, self._metrics_frontend),
        ) if port is not None]
        for key, frontend in built:
            pattern = self.header_forward.get(key)
            if isinstance(frontend, HttpFrontend) and pattern is not None:
                frontend.forward_headers(pattern)
            elif isinstance(frontend, GrpcFrontend):
                frontend.header_forward = pattern
        return self.start_built(built)

    def start_built(self, built: list[tuple[str, Any]]) -> FrontendAddresses:
        """Start frontends made elsewhere (`tritium serve`'s, from its flags), each named
        "http", "grpc" or "metrics" for the addresses returned (others are started, unnamed)."""
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._start(built), self._loop)
        try:
            return future.result()
        except BaseException:
            self.stop(0.0)
            raise

    async def _start(self, built: list[tuple[str, Any]]) -> FrontendAddresses:
        bound: dict[str, str] = {}
        for key, frontend in built:
            await frontend.start()
            self._running.append(frontend)
            if key in ("http", "grpc", "metrics"):
                bound[key] = f"{frontend.address}:{frontend.port}"
        return FrontendAddresses(**bound)

    def _grpc_frontend(self, server: InferenceServer, address: str, port: int) -> GrpcFrontend:
        return GrpcFrontend(server, address, port, **self.grpc_settings)

    def _metrics_frontend(self, server: InferenceServer, address: str,
                          port: int) -> MetricsFrontend:
        return MetricsFrontend(server, address, port, **self._metrics_settings)

    def stop(self, grace: float) -> None:
        """Stop accepting, give requests in flight up to `grace` seconds, end the thread."""
        if not self._thread.is_alive():
            return
        running, self._running = self._running, []

        async def stop_all() -> None:
            await asyncio.gather(*(f.stop(grace) for f in running), return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop_all(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


def cli_frontends(server: InferenceServer, args: argparse.Namespace) -> list[tuple[str, Any]]:
    """The frontends `tritium serve` starts for these flags, each with its kind ("http",
    "grpc", "metrics"; "" for others) for the addresses `start_built` reports."""
    kinds = ((HttpFrontend, "http"), (GrpcFrontend, "grpc"), (MetricsFrontend, "metrics"))
    return [(next((kind for cls, kind in kinds if isinstance(frontend, cls)), ""), frontend)
            for frontend in build_frontends(server, args)]


class PolledMetrics:
    """What `Server.metrics()` serves: Triton's metric families, with the GPU and CPU figures
    polled every metrics interval while the server runs (each only when its option is on), as
    Triton's metrics thread polls them for the in-process API too."""

    def __init__(self, server: InferenceServer, interval_s: float, gpu: bool, cpu: bool,
                 pinned_pool_bytes: int) -> None:
        self._gpu = GpuMetrics(server.gpus.devices, interval_s) if gpu else None
        self._cpu = CpuMetrics(interval_s) if cpu else None
        self._metrics = ServerMetrics(server, cpu=self._cpu, gpu=self._gpu,
                                      pinned_pool_bytes=pinned_pool_bytes)

    def start(self) -> None:
        for poller in (self._gpu, self._cpu):
            if poller is not None:
                poller.start()

    def stop(self) -> None:
        for poller in (self._gpu, self._cpu):
            if poller is not None:
                poller.stop()

    def text(self) -> str:
        """The Prometheus text the metrics port would serve."""
        return self._metrics.text().decode("utf-8")


__all__ = ["FrontendAddresses", "Frontends", "HeaderPattern", "PolledMetrics", "cli_frontends",
           "statistics_json"]
