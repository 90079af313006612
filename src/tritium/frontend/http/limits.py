"""What an HTTP/1.1 client may make the server hold before a request is complete: the request
line and header section, and how long they and an idle keep-alive connection may take.

Triton's HTTP endpoint (libevhtp) closes a connection sending an oversized header at once; these
are Tritium's own bounds in the same spirit, set with `--http-max-header-size`,
`--http-max-url-size`, `--http-header-timeout-secs` and `--http-keepalive-timeout-secs` (Triton
has no such flags). An oversized request line or header section is answered 414 or 431 and the
connection closed before more of it is read, and a header section still incomplete after the
timeout is answered 408 and closed, so slow or endless headers cost a bounded amount of memory
and time per connection. The body's bound is `--http-max-input-size` (`DEFAULT_MAX_INPUT_SIZE`
here, held by connection.py).
"""

from __future__ import annotations

from dataclasses import dataclass

# Triton's HTTP_DEFAULT_MAX_INPUT_SIZE.
DEFAULT_MAX_INPUT_SIZE = 64 * 1024 * 1024
# The gRPC side's header list bound (frontend/grpc), and what common proxies allow.
DEFAULT_MAX_HEADER_SIZE = 64 * 1024
DEFAULT_MAX_URL_SIZE = 16 * 1024
DEFAULT_HEADER_TIMEOUT_S = 30.0
# Idle keep-alive connections are kept long (Triton keeps them open; clients with pooled
# connections rely on it).
DEFAULT_KEEPALIVE_TIMEOUT_S = 3600.0


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """The bounds one endpoint holds its connections to."""

    max_header_size: int = DEFAULT_MAX_HEADER_SIZE  # request line and headers, in bytes
    max_url_size: int = DEFAULT_MAX_URL_SIZE  # the request target, in bytes
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S  # first byte of a head to its end
    keepalive_timeout_s: float = DEFAULT_KEEPALIVE_TIMEOUT_S  # idle between requests

    @property
    def sweep_interval_s(self) -> float:
        """How often connections are checked against the timeouts: a timed-out one is closed
        at most a quarter of its timeout late (one periodic sweep, not a timer per request)."""
        return min(60.0, max(0.25, min(self.header_timeout_s, self.keepalive_timeout_s) / 4))


class Refused(Exception):
    """Raised from a parser callback: answer `answer` and close, reading nothing more."""

    def __init__(self, answer: bytes) -> None:
        super().__init__()
        self.answer = answer


def closing_answer(status: bytes, text: bytes) -> bytes:
    """A whole plain-text answer after which the connection closes."""
    return (b"HTTP/1.1 " + status + b"\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n" % len(text) + text)


URL_TOO_LONG = closing_answer(
    b"414 URI Too Long",
    b"The request URL is too long (see --http-max-url-size).")
HEADERS_TOO_LARGE = closing_answer(
    b"431 Request Header Fields Too Large",
    b"The request's header section is too large (see --http-max-header-size).")
HEADER_TIMEOUT = closing_answer(
    b"408 Request Timeout",
    b"The request's header section took too long (see --http-header-timeout-secs).")
