"""A redis that requires a password and never gets the right one: it answers AUTH with redis's
WRONGPASS and any other command with NOAUTH, as a real redis with `requirepass` does.

fakeredis (which the other redis cache tests use) accepts unauthenticated commands and names
a refused AUTH "NOAUTH"; this stands in for the two refusals whose replies Triton's L0 tests
read."""

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
            self.wfile.write(WRONGPASS if words[0].upper() == b"AUTH" else NOAUTH)


@contextmanager
def locked_redis() -> Iterator[int]:
    """Serve on a free local port (yielded) until the block ends."""
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
