"""The limits an HTTP/2 server holds a client to, and the policies that enforce them.

An HTTP/2 connection lets one client ask the server for work and memory it never pays for:
streams it resets as soon as they start (Rapid Reset, CVE-2023-44487), header blocks it never
ends (the CONTINUATION flood, CVE-2024-27316), and the 2019 family (CVE-2019-9511..9518: pings,
settings, priorities, resets and empty frames the server must answer or process, answers the
client never reads). `H2Limits` bounds each of them, with defaults taken from the libraries that
fixed those CVEs: nghttp2 (100 concurrent streams, a reset budget of 1,000 plus 33 a second, 8
CONTINUATION frames... we allow a few more), h2 (64 KiB header lists) and gRPC core (its
keepalive and ping-abuse channel arguments, `KeepAliveOptions`, which Triton exposes as
`--grpc-keepalive-*` and `--grpc-http2-*` flags with the same defaults).

`PingPolicy` is gRPC core's ping-abuse rule (chttp2's `Chttp2PingAbusePolicy`): a ping that comes
sooner than the minimum interval after the previous one, while the server has sent no headers,
DATA or WINDOW_UPDATE since (what resets gRPC core's ping clock), is a strike; more strikes than
allowed and the server answers GOAWAY ENHANCE_YOUR_CALM "too_many_pings". `RateLimit` is a token
bucket for the other control frames.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

_MS = 1e-3


@dataclass(frozen=True)
class KeepAliveOptions:
    """Triton's `KeepAliveOptions` (src/grpc/grpc_server.h), gRPC core's channel arguments, in
    milliseconds; `None` for the connection age means unlimited, as Triton's "undefined"."""

    keepalive_time_ms: int = 7_200_000
    keepalive_timeout_ms: int = 20_000
    keepalive_permit_without_calls: bool = False
    http2_max_pings_without_data: int = 2
    http2_min_recv_ping_interval_without_data_ms: int = 300_000
    http2_max_ping_strikes: int = 2
    max_connection_age_ms: int | None = None
    max_connection_age_grace_ms: int | None = None


@dataclass(frozen=True)
class H2Limits:
    """What one connection may hold of the server's memory and ask of its time."""

    # Advertised (SETTINGS_MAX_CONCURRENT_STREAMS); more are refused with REFUSED_STREAM.
    max_concurrent_streams: int = 100
    # Advertised (SETTINGS_MAX_HEADER_LIST_SIZE), counted as RFC 9113 does (name + value + 32
    # per field). A larger list fails its call; one twice as large ends the connection (the
    # block is not even decoded).
    max_header_list_size: int = 64 * 1024
    # CONTINUATION frames one header block may take (nghttp2 allows 8).
    max_continuations: int = 32
    # Receive windows: per stream (SETTINGS_INITIAL_WINDOW_SIZE) and for the connection; given
    # back as the application takes the bytes.
    stream_window: int = 4 * 1024 * 1024
    connection_window: int = 16 * 1024 * 1024
    # Bytes a connection's calls may hold unconsumed (partial and queued request messages);
    # the call whose data goes past it fails. The gRPC server raises it to its maximum message
    # size (plus prefix) when that is larger, so one largest message always fits.
    max_buffered_input: int = 256 * 1024 * 1024
    # Bytes that may wait for a client that does not read (flow control or TCP); past it the
    # stream that wants to add more is cancelled. While the socket's own buffer is full, the
    # connection's input is not read at all.
    max_buffered_output: int = 64 * 1024 * 1024
    # Token buckets (burst, per second) for control frames a client can send without limit.
    resets: tuple[int, float] = (1000, 33.0)  # RST_STREAM (nghttp2's Rapid Reset budget)
    settings: tuple[int, float] = (100, 10.0)
    priorities: tuple[int, float] = (1000, 100.0)
    pings: tuple[int, float] = (1000, 100.0)  # behind the ping strikes, whatever data flows
    empty_frames: tuple[int, float] = (100, 10.0)  # DATA/CONTINUATION that carry nothing
    keepalive: KeepAliveOptions = field(default_factory=KeepAliveOptions)


class RateLimit:
    """A token bucket: `take()` is False once the burst is spent faster than the rate refills."""

    __slots__ = ("_burst", "_rate", "_tokens", "_last")

    def __init__(self, burst_and_rate: tuple[int, float]) -> None:
        self._burst, self._rate = float(burst_and_rate[0]), burst_and_rate[1]
        self._tokens = self._burst
        self._last = time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self._tokens = min(self._burst, self._tokens + (now - self._last) * self._rate)
        self._last = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True


class PingPolicy:
    """gRPC core's server-side ping-abuse rule (see the module docstring)."""

    __slots__ = ("_options", "_last", "_strikes")

    def __init__(self, options: KeepAliveOptions) -> None:
        self._options = options
        self._last: float | None = None
        self._strikes = 0

    def received(self, idle: bool) -> bool:
        """One ping from the client; True when it is one strike too many. `idle`: no call is
        open on the connection."""
        options = self._options
        now = time.monotonic()
        if idle and not options.keepalive_permit_without_calls:
            interval = 7200.0  # gRPC core: two hours when pings without calls are not allowed
        else:
            interval = options.http2_min_recv_ping_interval_without_data_ms * _MS
        last, self._last = self._last, now
        if last is None or now - last >= interval:
            return False
        self._strikes += 1
        return 0 < options.http2_max_ping_strikes < self._strikes

    def data_sent(self) -> None:
        """The server sent headers, data or a window update: strikes start over, as in gRPC
        core."""
        self._strikes = 0
        self._last = None


__all__ = ["H2Limits", "KeepAliveOptions", "PingPolicy", "RateLimit"]
