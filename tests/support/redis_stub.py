"""Two redis servers fakeredis cannot be. A locked one requires a password and never gets the
right one: it answers AUTH with redis's WRONGPASS and any other command with NOAUTH, as a real
redis with `requirepass` does (fakeredis accepts unauthenticated commands and names a refused
AUTH "NOAUTH"); these are the refusals Triton's L0 tests read. A stalled one answers the
connection's set-up and PING, and never a GET or a SET: a redis that stopped answering."""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager

WRONGPASS = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
NOAUTH = b"-NOAUTH Authentication required.\r\n"


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        while True:
            header = self.rfile.readline()  # *<count> of a RESP array of bulk strings
            if not header.startswith(b"*"):
                return
            words = []
            for _ in range(int(header[1:])):
                length = int(self.rfile.readline()[1:])
                words.append(self.rfile.read(length + 2)[:-2])
            reply = self.reply(words[0].upper())
            if reply is None:
                self.rfile.read()  # no answer, ever: wait for the client to give up
                return
            self.wfile.write(reply)

    def reply(self, command: bytes) -> bytes | None:
        return WRONGPASS if command == b"AUTH" else NOAUTH


class _StalledHandler(_Handler):
    def reply(self, command: bytes) -> bytes | None:
        if command in (b"GET", b"SET"):
            return None
        return b"+PONG\r\n" if command == b"PING" else b"+OK\r\n"


@contextmanager
def locked_redis() -> Iterator[int]:
    """Serve on a free local port (yielded) until the block ends."""
    with _serving(_Handler) as port:
        yield port


@contextmanager
def stalled_redis() -> Iterator[int]:
    """A redis that never answers a GET or SET, on a free local port (yielded)."""
    with _serving(_StalledHandler) as port:
        yield port


@contextmanager
def _serving(handler: type[_Handler]) -> Iterator[int]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
