"""Reading an HTTP/1.1 server's answers off a raw socket, checking their framing on the way.

The HTTP/1.1 fuzz sends requests no client library would send, so it cannot use one to read
the answers either: this reads whatever comes back, splits it into responses by their own
framing (Content-Length, chunked, none for HEAD and 1xx/204/304) and says what is wrong with
it, if anything. A server that answers must answer well-formed; closing is always allowed.
"""

from __future__ import annotations

import re
import socket
import time
from dataclasses import dataclass, field

_STATUS_LINE = re.compile(rb"HTTP/1\.1 ([1-5][0-9][0-9]) [^\r\n]*")
_HEADER = re.compile(rb"([!#$%&'*+\-.^_`|~0-9A-Za-z]+): ?([^\r\n]*)")


class Malformed(AssertionError):
    """The server's bytes are not a well-formed HTTP/1.1 answer."""


@dataclass
class Response:
    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes

    def header(self, name: bytes) -> bytes | None:
        for key, value in self.headers:
            if key == name:
                return value
        return None


@dataclass
class Exchange:
    """What came back for one connection's requests: the responses, and whether the server
    closed the connection (rather than the client giving up waiting)."""

    responses: list[Response] = field(default_factory=list)
    closed: bool = False


def _take_head(data: bytes) -> tuple[int, list[tuple[bytes, bytes]], int] | None:
    """The status and headers at the start of `data` and where the body starts (None: not
    all here yet)."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        if len(data) > 65536:
            raise Malformed(f"no end of head in {data[:200]!r}")
        return None
    lines = data[:end].split(b"\r\n")
    match = _STATUS_LINE.fullmatch(lines[0])
    if match is None:
        raise Malformed(f"bad status line {lines[0][:200]!r}")
    headers = []
    for line in lines[1:]:
        header = _HEADER.fullmatch(line)
        if header is None:
            raise Malformed(f"bad header line {line[:200]!r}")
        headers.append((header.group(1).lower(), header.group(2)))
    return int(match.group(1)), headers, end + 4


def _take_chunked(data: bytes, start: int) -> tuple[bytes, int] | None:
    body = b""
    at = start
    while True:
        end = data.find(b"\r\n", at)
        if end < 0:
            return None
        try:
            size = int(data[at:end], 16)
        except ValueError:
            raise Malformed(f"bad chunk size {data[at:end][:50]!r}") from None
        if len(data) < end + 2 + size + 2:
            return None
        if data[end + 2 + size : end + 4 + size] != b"\r\n":
            raise Malformed("chunk not followed by CRLF")
        body += data[end + 2 : end + 2 + size]
        at = end + 4 + size
        if size == 0:
            return body, at


def take_response(data: bytes, head_request: bool) -> tuple[Response, int] | None:
    """The first whole response in `data` and its length (None: not all here yet)."""
    head = _take_head(data)
    if head is None:
        return None
    status, headers, start = head
    lengths = [value for key, value in headers if key == b"content-length"]
    chunked = any(key == b"transfer-encoding" for key, _ in headers)
    if len(lengths) > 1 or (lengths and chunked):
        raise Malformed(f"ambiguous framing: {headers}")
    if status < 200 or status in (204, 304) or head_request:
        return Response(status, headers, b""), start
    if chunked:
        taken = _take_chunked(data, start)
        if taken is None:
            return None
        return Response(status, headers, taken[0]), taken[1]
    if not lengths:
        raise Malformed(f"{status} answer without Content-Length: {headers}")
    if not lengths[0].isdigit():
        raise Malformed(f"bad Content-Length {lengths[0]!r}")
    end = start + int(lengths[0])
    if len(data) < end:
        return None
    return Response(status, headers, data[start:end]), end


def exchange(address: tuple[str, int], data: bytes, head_first: bool = False,
             wait_s: float = 2.0, close_s: float = 10.0) -> Exchange:
    """Send `data`, then read answers until the server closes. A server still waiting for more
    after `wait_s` of silence is told the client is done (half-close), and must then close
    within `close_s`. `head_first`: the first request is a HEAD (its answer has no body)."""
    result = Exchange()
    buffer = b""
    with socket.create_connection(address, timeout=wait_s) as sock:
        try:
            sock.sendall(data)
        except OSError:
            pass  # the server closed on an early part of it: read what it said
        deadline: float | None = None
        while True:
            if deadline is not None:
                sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                if deadline is not None:
                    raise Malformed(f"not closed {close_s} s after the client finished") from None
                sock.shutdown(socket.SHUT_WR)
                deadline = time.monotonic() + close_s
                continue
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                result.closed = True
                break
            buffer += chunk
            while (taken := take_response(buffer, head_first and not result.responses)):
                response, used = taken
                if response.status >= 200:
                    result.responses.append(response)
                buffer = buffer[used:]
    if buffer:
        raise Malformed(f"the connection closed inside an answer: {buffer[:200]!r}")
    return result
