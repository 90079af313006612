"""Triton's `tritonfrontend` shape: KServe HTTP/gRPC (and metrics) services for an in-process
server, as Triton's tutorials start them.

    http_service = KServeHttp(server, KServeHttp.Options(port=8000))   # or KServeHttp.Server(...)
    http_service.start()
    ...
    http_service.stop()            # or: with KServeHttp(server) as service: ...

Each service is one of Tritium's frontends on an event-loop thread of its own, serving the
same core as `Model.infer`; stopping the server stops its services (Triton's would crash).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from .errors import InvalidArgumentError
from .frontends import Frontends, HeaderPattern
from .server import Server


class _Service:
    """One frontend for one server: `start()`, `stop()`, a context manager."""

    _kind: ClassVar[str]

    @dataclass
    class Options:
        address: str = "0.0.0.0"
        port: int = 0

    def __init__(self, server: Server, options: Any = None) -> None:
        self._server = server
        self._options = options if options is not None else type(self).Options()
        if not 0 <= self._options.port <= 65535:
            raise InvalidArgumentError(f"invalid port {self._options.port}")
        self._frontends: Frontends | None = None
        self.port: int | None = None

    def start(self) -> None:
        if self._frontends is not None:
            raise InvalidArgumentError(f"{type(self).__name__} already started")
        ports: dict[str, int | None] = {"http": None, "grpc": None, "metrics": None}
        ports[self._kind] = self._options.port
        pattern = getattr(self._options, "header_forward_pattern", "")
        try:
            forward = {self._kind: HeaderPattern(pattern)} if pattern else {}
        except ValueError as exc:
            raise InvalidArgumentError(str(exc)) from None
        self._frontends, addresses = self._server._serve(
            self._options.address, ports["http"], ports["grpc"], ports["metrics"], forward)
        bound = getattr(addresses, self._kind)
        self.port = int(bound.rsplit(":", 1)[1])

    def stop(self) -> None:
        frontends, self._frontends = self._frontends, None
        if frontends is not None:
            self._server._stop_serving(frontends)

    def __enter__(self) -> _Service:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class KServeHttp(_Service):
    _kind = "http"

    @dataclass
    class Options:
        address: str = "0.0.0.0"
        port: int = 8000
        reuse_port: bool = False
        thread_count: int = 8
        header_forward_pattern: str = ""


class KServeGrpc(_Service):
    _kind = "grpc"

    @dataclass
    class Options:
        address: str = "0.0.0.0"
        port: int = 8001
        reuse_port: bool = False
        header_forward_pattern: str = ""


class Metrics(_Service):
    _kind = "metrics"

    @dataclass
    class Options:
        address: str = "0.0.0.0"
        port: int = 8002
        thread_count: int = 1


# The shape of Triton's first tutorials: KServeHttp.Server(server, options).
KServeHttp.Server = KServeHttp  # type: ignore[attr-defined]
KServeGrpc.Server = KServeGrpc  # type: ignore[attr-defined]
Metrics.Server = Metrics  # type: ignore[attr-defined]

__all__ = ["KServeGrpc", "KServeHttp", "Metrics"]
