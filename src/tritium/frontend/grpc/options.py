"""The gRPC endpoint's options: Triton's `grpc::Options` (src/grpc/grpc_server.h) in Python.

Triton groups them as `SslOptions` and `KeepAliveOptions` (the `--grpc-use-ssl*`,
`--grpc-*-cert`/`--grpc-server-key`, `--grpc-keepalive-*`, `--grpc-http2-*` and
`--grpc-max-connection-age*` flags, with its defaults); Tritium adds the largest request message it
accepts (`--grpc-max-message-size`, by default Triton's fixed 2 GiB - 1; Triton inflates a
compressed message without bound, Tritium stops at that size). The TLS context speaks ALPN `h2`, as
gRPC requires, and with mutual authentication refuses a client without a certificate signed by the
root certificate.
"""

from __future__ import annotations

import argparse
import ssl
from dataclasses import dataclass, field

from .http2_limits import H2Limits, KeepAliveOptions
from .server import DEFAULT_MAX_MESSAGE_SIZE


@dataclass(frozen=True)
class SslOptions:
    """Triton's `SslOptions`: PEM files; `use_mutual_auth` wants client certificates signed by
    `root_cert`."""

    server_cert: str
    server_key: str
    root_cert: str = ""
    use_mutual_auth: bool = False

    def context(self) -> ssl.SSLContext:
        """The server's TLS context (TLS 1.2 or later, ALPN h2). OSError/ssl.SSLError if a file
        cannot be read."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.set_alpn_protocols(["h2"])
        context.load_cert_chain(self.server_cert, self.server_key)
        if self.use_mutual_auth:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(self.root_cert)
        return context


@dataclass(frozen=True)
class GrpcOptions:
    """Everything the gRPC endpoint is configured with beyond its address."""

    limits: H2Limits = field(default_factory=H2Limits)
    ssl: SslOptions | None = None
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> GrpcOptions:
        """The options `tritium serve`'s gRPC flags set (see cli.py)."""
        keepalive = KeepAliveOptions(
            keepalive_time_ms=args.grpc_keepalive_time,
            keepalive_timeout_ms=args.grpc_keepalive_timeout,
            keepalive_permit_without_calls=args.grpc_keepalive_permit_without_calls,
            http2_max_pings_without_data=args.grpc_http2_max_pings_without_data,
            http2_min_recv_ping_interval_without_data_ms=(
                args.grpc_http2_min_recv_ping_interval_without_data),
            http2_max_ping_strikes=args.grpc_http2_max_ping_strikes,
            max_connection_age_ms=args.grpc_max_connection_age,
            max_connection_age_grace_ms=args.grpc_max_connection_age_grace,
        )
        tls = None
        # As tritonserver: mutual authentication implies TLS.
        if args.grpc_use_ssl or args.grpc_use_ssl_mutual:
            tls = SslOptions(args.grpc_server_cert, args.grpc_server_key, args.grpc_root_cert,
                             use_mutual_auth=bool(args.grpc_use_ssl_mutual))
        return cls(limits=H2Limits(keepalive=keepalive), ssl=tls,
                   max_message_size=args.grpc_max_message_size)


__all__ = ["GrpcOptions", "SslOptions"]
