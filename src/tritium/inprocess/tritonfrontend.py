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

import dataclasses
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, ClassVar

from ..frontend.grpc.http2_limits import H2Limits, KeepAliveOptions
from ..frontend.grpc.options import GrpcOptions, SslOptions
from .errors import AlreadyExistsError, InvalidArgumentError
from .frontends import Frontends, HeaderPattern
from .server import Server


class _Checked:
    """Options checked as Triton's pydantic dataclasses check them: each value of its field's
    type (an int may come as a string of digits), ports within 0-65535, counts and times not
    negative. A wrong one raises InvalidArgumentError naming the field."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if f.type == "str" and not isinstance(value, str):
                raise InvalidArgumentError(f"Options.{f.name} must be a string, got {value!r}")
            if f.type == "bool" and not isinstance(value, bool):
                raise InvalidArgumentError(f"Options.{f.name} must be a bool, got {value!r}")
            if f.type == "int":
                value = _integer(f.name, value)
                top = 65535 if f.name == "port" else None
                if value < 0 or (top is not None and value > top):
                    bounds = f"0 to {top}" if top is not None else ">= 0"
                    raise InvalidArgumentError(f"Options.{f.name} must be {bounds}, got {value}")
                setattr(self, f.name, value)


def _integer(name: str, value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value)
    raise InvalidArgumentError(f"Options.{name} must be an integer, got {value!r}")


class _Service:
    """One frontend for one server: `start()`, `stop()`, a context manager."""

    _kind: ClassVar[str]

    @dataclass
    class Options(_Checked):
        address: str = "0.0.0.0"
        port: int = 0

    def __init__(self, server: Server, options: Any = None) -> None:
        self._server = server
        kind = type(self)
        if options is None:
            options = kind.Options()
        if not isinstance(options, kind.Options):
            raise InvalidArgumentError(
                f"Incorrect type for options. options argument must be of type "
                f"{kind.__name__}.Options")
        self._options: Any = options
        self._frontends: Frontends | None = None
        self.port: int | None = None

    def start(self) -> None:
        if self._frontends is not None:
            raise AlreadyExistsError(
                f"Failed to start {type(self).__name__}: server is already running.")
        ports: dict[str, int | None] = {"http": None, "grpc": None, "metrics": None}
        ports[self._kind] = self._options.port
        pattern = (getattr(self._options, "forward_header_pattern", "")
                   or getattr(self._options, "header_forward_pattern", ""))
        try:
            forward = {self._kind: HeaderPattern(pattern)} if pattern else {}
        except ValueError as exc:
            raise InvalidArgumentError(str(exc)) from None
        self._frontends, addresses = self._server._serve(
            self._options.address, ports["http"], ports["grpc"], ports["metrics"], forward,
            self._grpc_settings())
        bound = getattr(addresses, self._kind)
        self.port = int(bound.rsplit(":", 1)[1])

    def _grpc_settings(self) -> dict[str, Any]:
        return {}

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
    class Options(_Checked):
        address: str = "0.0.0.0"
        port: int = 8000
        reuse_port: bool = False
        thread_count: int = 8
        header_forward_pattern: str = ""


class Grpc_compression_level(IntEnum):  # noqa: N801 (Triton's name)
    """Triton's gRPC compression levels (KServeGrpc.Grpc_compression_level)."""

    NONE = 0
    LOW = 1
    MED = 2
    HIGH = 3
    COUNT = 4


# KServeGrpc's compression levels as `--grpc-infer-response-compression-level` names them.
_COMPRESSION = {Grpc_compression_level.NONE: "none", Grpc_compression_level.LOW: "low",
                Grpc_compression_level.MED: "medium", Grpc_compression_level.HIGH: "high"}


class KServeGrpc(_Service):
    """Triton's KServeGrpc: its options are checked as Triton checks them and applied as the
    corresponding `tritium serve --grpc-*` flags are (TLS, keepalive, response compression,
    port reuse); `infer_allocation_pool_size` changes nothing, as its flag."""

    _kind = "grpc"
    Grpc_compression_level = Grpc_compression_level

    def _grpc_settings(self) -> dict[str, Any]:
        options = self._options
        # The keepalive options have KeepAliveOptions' names; a connection age of 0 is no
        # limit (Triton leaves gRPC's channel argument unset).
        values = {f.name: getattr(options, f.name) for f in dataclasses.fields(KeepAliveOptions)}
        for age in ("max_connection_age_ms", "max_connection_age_grace_ms"):
            values[age] = values[age] or None
        keepalive = KeepAliveOptions(**values)
        tls = None
        if options.use_ssl or options.use_mutual_auth:  # mutual implies TLS, as Triton's
            tls = SslOptions(options.server_cert, options.server_key, options.root_cert,
                             use_mutual_auth=options.use_mutual_auth)
        level = _COMPRESSION.get(options.infer_compression_level)
        if level is None:
            raise InvalidArgumentError(
                f"Options.infer_compression_level must be one of 0-3, got "
                f"{options.infer_compression_level}")
        return {"options": GrpcOptions(limits=H2Limits(keepalive=keepalive), ssl=tls),
                "compression_level": level, "reuse_port": options.reuse_port}

    @dataclass
    class Options(_Checked):
        address: str = "0.0.0.0"
        port: int = 8001
        reuse_port: bool = False
        use_ssl: bool = False
        server_cert: str = ""
        server_key: str = ""
        root_cert: str = ""
        use_mutual_auth: bool = False
        keepalive_time_ms: int = 7_200_000
        keepalive_timeout_ms: int = 20_000
        keepalive_permit_without_calls: bool = False
        http2_max_pings_without_data: int = 2
        http2_min_recv_ping_interval_without_data_ms: int = 300_000
        http2_max_ping_strikes: int = 2
        max_connection_age_ms: int = 0
        max_connection_age_grace_ms: int = 0
        infer_compression_level: int = Grpc_compression_level.NONE
        infer_allocation_pool_size: int = 8
        forward_header_pattern: str = ""
        # Tritium's earlier name of forward_header_pattern, still read.
        header_forward_pattern: str = ""


class Metrics(_Service):
    _kind = "metrics"

    @dataclass
    class Options(_Checked):
        address: str = "0.0.0.0"
        port: int = 8002
        thread_count: int = 1


# The shape of Triton's first tutorials: KServeHttp.Server(server, options).
KServeHttp.Server = KServeHttp  # type: ignore[attr-defined]
KServeGrpc.Server = KServeGrpc  # type: ignore[attr-defined]
Metrics.Server = Metrics  # type: ignore[attr-defined]

__all__ = ["KServeGrpc", "KServeHttp", "Metrics"]
