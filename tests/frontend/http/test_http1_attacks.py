"""Attacks on the HTTP/1.1 endpoint's request head, run against a live server on loopback.

Each test sends one attack over a raw socket while a well-behaved tritonclient (HTTP) keeps
calling infer beside it, and asserts what a user sees: the attacker is answered 414, 431 or 408
and its connection closed before the rest is read, the good client got every answer, and the
server's resident memory stayed bounded (printed with the good client's slowest call; run with
`-s` to see them). Before these limits a 128 MB header or a 64 MB URL was read into memory
(+986 MB) and slow headers were kept for as long as the client liked.
"""

from __future__ import annotations

import socket
import time

import pytest
import tritonclient.http as httpclient

from support.attack_measure import Measured
from support.server_process import ServerProcess

MiB = 1024 * 1024
HEADER_TIMEOUT_S = 1
KEEPALIVE_TIMEOUT_S = 2


@pytest.fixture(scope="module")
def server(standard_repo):
    """A server of its own, with short timeouts: its memory is what these tests measure."""
    with ServerProcess([standard_repo], f"--http-header-timeout-secs={HEADER_TIMEOUT_S}",
                       f"--http-keepalive-timeout-secs={KEEPALIVE_TIMEOUT_S}") as process:
        yield process


def _connect(server: ServerProcess) -> socket.socket:
    host, port = server.http_url.split(":")
    return socket.create_connection((host, int(port)), timeout=30)


def _send_until_closed(sock: socket.socket, head: bytes, filler: bytes, total: int,
                       measured: Measured) -> int:
    """Send `head`, then `filler` until `total` bytes or the server stops reading; the bytes
    sent (the server closes long before `total`)."""
    sent = 0
    try:
        sock.sendall(head)
        while sent < total:
            sock.sendall(filler)
            sent += len(filler)
            if sent % (4 * MiB) < len(filler):
                measured.sample()
    except (BrokenPipeError, ConnectionResetError):
        pass
    return sent


def _answer(sock: socket.socket) -> bytes:
    """Everything the server sent before closing (it must close)."""
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass  # closed with our unread bytes still queued: the answer may be lost
    return data


@pytest.mark.parametrize("name, head, filler, status", [
    ("one 128 MB header", b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Big: ",
     b"a" * 65536, b"431"),
    ("8 million tiny headers", b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n",
     b"a: b\r\n" * 10000, b"431"),
    ("a 64 MB URL", b"GET /v2/" , b"a" * 65536, b"414"),
])
def test_oversized_heads_are_refused_before_they_are_read(server, name, head, filler,
                                                          status) -> None:
    with Measured(server, name, 48 * MiB, httpclient) as measured, _connect(server) as sock:
        sent = _send_until_closed(sock, head, filler, 128 * MiB, measured)
        answer = _answer(sock)
    assert sent < 16 * MiB, f"{name}: the server read {sent} bytes before closing"
    # Usually the status arrives; a reset racing our writes may discard it.
    assert answer == b"" or answer.startswith(b"HTTP/1.1 " + status), answer[:80]


def test_a_head_just_under_the_limits_is_served(server) -> None:
    client = httpclient.InferenceServerClient(server.http_url)
    assert client.is_server_live(headers={"x-pad": "a" * 60000})
    client.close()


def test_slow_headers_are_answered_408_and_closed(server) -> None:
    """A client sending its head a byte at a time (slowloris) is cut off at the header
    timeout, however steadily it sends."""
    with _connect(server) as sock:
        sock.sendall(b"GET /v2/health/live HTTP/1.1\r\n")
        start = time.monotonic()
        answer = b""
        try:
            while time.monotonic() - start < 30:
                sock.sendall(b"x")
                time.sleep(0.2)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = _answer(sock)
    assert time.monotonic() - start < 15  # the bound is the behaviour: 1 s, swept each 0.25 s
    assert answer == b"" or answer.startswith(b"HTTP/1.1 408"), answer


def test_a_thousand_slow_clients_leave_the_good_one_served(server) -> None:
    with Measured(server, "1,000 slowloris connections", 64 * MiB, httpclient):
        socks = [_connect(server) for _ in range(1000)]
        for sock in socks:
            sock.sendall(b"GET /v2/health/live HTTP/1.1\r\n")
        deadline = time.monotonic() + 30
        closed = 0
        while closed < len(socks) and time.monotonic() < deadline:
            time.sleep(0.5)
            closed = sum(1 for sock in socks if _is_closed(sock))
        for sock in socks:
            sock.close()
    assert closed == len(socks)


def _is_closed(sock: socket.socket) -> bool:
    """Whether the server has closed `sock` (its 408 answer, if any, read and dropped)."""
    sock.setblocking(False)
    try:
        while chunk := sock.recv(65536):
            assert chunk.startswith(b"HTTP/1.1 408"), chunk
        return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def test_idle_keep_alive_connections_are_closed(server) -> None:
    with _connect(server) as sock:
        sock.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        start = time.monotonic()
        assert sock.recv(65536) == b""  # closed by the server, without an answer
    assert time.monotonic() - start < 20
