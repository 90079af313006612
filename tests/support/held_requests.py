"""Requests held where the server works on them, for the tests that check that other clients
are answered meanwhile (work off the event loop, `frontend/bulk_work.py`).

The points are reached without timing: a request's last byte is held back until the server has
read the rest (its socket's receive queue is empty; a gRPC PING is answered after the frames
before it), so the server's work starts as that byte arrives; an answer is worked on as soon as
the model sends it, and a small request waiting in the same model's queue reaches the loop just
behind it.
"""

from __future__ import annotations

import http.client
import select
import socket
import struct
import time
from collections.abc import Callable

import hpack
from tritonclient.grpc import service_pb2 as pb

from support.h2_frames import (
    ACK,
    DATA,
    END_HEADERS,
    END_STREAM,
    HEADERS,
    PING,
    SETTINGS,
    SETTINGS_INITIAL_WINDOW_SIZE,
    WINDOW_UPDATE,
    RawClient,
    frame,
    grpc_message,
    request_headers,
)
from support.server_process import ServerProcess

MODEL_INFER = "/inference.GRPCInferenceService/ModelInfer"


def unread_by_server(server_port: int, client: socket.socket) -> int:
    """Bytes the server has not read yet from `client`'s connection (its receive queue)."""
    client_port = client.getsockname()[1]
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                local, remote = fields[1].rsplit(":", 1)[1], fields[2].rsplit(":", 1)[1]
                if int(local, 16) == server_port and int(remote, 16) == client_port:
                    return int(fields[4].split(":")[1], 16)
    raise AssertionError("the server's end of the connection is not listed")


def until(condition: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.005)


def http_answered(connection: socket.socket) -> bool:
    """Whether anything of the answer has come back on `connection`."""
    return bool(select.select([connection], [], [], 0)[0])


def http_answer(connection: socket.socket) -> tuple[int, bytes, http.client.HTTPResponse]:
    answer = http.client.HTTPResponse(connection)
    answer.begin()
    return answer.status, answer.read(), answer


def http_post(host: str, port: int, path: str, header: bytes, data: bytes = b"",
              extra: str = "") -> bytes:
    """A binary-extension infer request (`header` JSON, then `data`), `extra` header lines
    (each ending in CRLF) added."""
    return (f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/octet-stream"
            f"\r\nInference-Header-Content-Length: {len(header)}\r\n{extra}"
            f"Content-Length: {len(header) + len(data)}\r\n\r\n").encode() + header + data


class GrpcCall:
    """One ModelInfer call on a raw HTTP/2 connection, its message sent within the server's
    flow-control windows; its answer's windows opened wide."""

    STREAM = 1

    def __init__(self, server: ServerProcess) -> None:
        wide = struct.pack(">HI", SETTINGS_INITIAL_WINDOW_SIZE, (1 << 31) - 1)
        self.client = RawClient(server.grpc_url, settings=wide)
        self._send(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", (1 << 31) - 65536)))
        self.server_port = int(server.grpc_url.rsplit(":", 1)[1])
        self._seen = 0
        self._stream_window = 65535
        self._connection_window = 65535

    def _send(self, data: bytes) -> None:
        assert self.client.send(data), "the server closed the connection"

    def _take_frames(self, timeout: float) -> None:
        """Read what the server sent: its settings (acknowledged) and window updates."""
        self.client.read_available(timeout)
        for f in self.client.frames[self._seen:]:
            if f.kind == SETTINGS and not f.flags & ACK:
                for at in range(0, len(f.payload), 6):
                    key, value = struct.unpack(">HI", f.payload[at : at + 6])
                    if key == SETTINGS_INITIAL_WINDOW_SIZE:
                        self._stream_window += value - 65535
                self._send(frame(SETTINGS, ACK, 0))
            elif f.kind == WINDOW_UPDATE:
                increment = struct.unpack(">I", f.payload)[0] & 0x7FFFFFFF
                if f.stream_id == 0:
                    self._connection_window += increment
                elif f.stream_id == self.STREAM:
                    self._stream_window += increment
        self._seen = len(self.client.frames)

    def send_holding_last_byte(self, message: pb.ModelInferRequest, *headers: tuple[str, str],
                               body: bytes | None = None) -> bytes:
        """Send the call's headers (with `headers` added) and all of its body (by default the
        message, uncompressed) but the last byte, once the server has processed all that (as
        its answer to a PING tells); return the last DATA frame."""
        block = hpack.Encoder().encode(request_headers(MODEL_INFER, *headers))
        self._send(frame(HEADERS, END_HEADERS, self.STREAM, block))
        if body is None:
            body = grpc_message(message.SerializeToString())
        sent, end = 0, len(body) - 1
        self._take_frames(0.5)
        while sent < end:
            room = min(self._stream_window, self._connection_window, 16384, end - sent)
            if room <= 0:
                self._take_frames(0.2)
                continue
            self._send(frame(DATA, 0, self.STREAM, body[sent : sent + room]))
            sent += room
            self._stream_window -= room
            self._connection_window -= room
        self._send(frame(PING, 0, 0, b"heldback"))
        until(self._ping_answered, "the server never answered the PING")
        return frame(DATA, END_STREAM, self.STREAM, body[end:])

    def _ping_answered(self) -> bool:
        self._take_frames(0.1)
        return any(f.kind == PING and f.flags & ACK for f in self.client.frames)

    def send(self, message: pb.ModelInferRequest, *headers: tuple[str, str]) -> None:
        self._send(self.send_holding_last_byte(message, *headers))

    def send_last(self, last: bytes) -> None:
        """Send the frame `send_holding_last_byte` held back."""
        self._send(last)

    def answered(self) -> bool:
        """Whether any of the call's answer (data or its status) has come back."""
        self.client.read_available(0)
        return any(f.stream_id == self.STREAM and (
            f.kind == DATA or (f.kind == HEADERS and f.flags & END_STREAM))
            for f in self.client.frames)

    def answer(self) -> tuple[dict[str, str], bytes]:
        """The call's status fields and its response message (with its 5-byte prefix)."""
        status = self.client.answer(self.STREAM, timeout=120)
        payload = b"".join(f.payload for f in self.client.frames
                           if f.kind == DATA and f.stream_id == self.STREAM)
        return status, payload

    def close(self) -> None:
        self.client.close()
