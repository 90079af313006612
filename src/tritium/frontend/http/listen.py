"""The listening socket an HTTP endpoint (and the server's other TCP listeners) accept on."""

from __future__ import annotations

import socket


def bind(address: str, port: int, reuse_port: bool = False) -> socket.socket:
    """A listening, non-blocking socket on address:port (IPv6 addresses take IPv4 too);
    `reuse_port` lets other processes listen on it too (SO_REUSEPORT)."""
    host = address.strip("[]") or None
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, sockaddr = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(sockaddr)
        sock.listen(1024)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock
