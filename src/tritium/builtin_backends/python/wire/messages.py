"""The control messages between the server and a stub, and the socket that frames them.

Control messages are tuples of plain values (str, int, float, bytes, lists, dicts), pickled and
sent as length-prefixed frames on an AF_UNIX stream socket, with any file descriptors a message
needs (one-off tensor segments, see `shm_tensors`) sent alongside it. Each instance has two
sockets: *exec* (the server's commands, answered in order) and *async* (everything either side
sends on its own).

Both sides import this module, and the stub may run under another interpreter (an execution
environment), so it uses only the standard library.
"""

from __future__ import annotations

import os
import pickle
import socket
import struct
import threading
from collections import deque
from collections.abc import Iterator, Sequence

# -- message kinds ---------------------------------------------------------------------------
# server -> stub, on the exec socket (each answered on the same socket, in order)
INIT = 1  # (INIT, settings dict) -> (DONE, error, info dict)
# (EXECUTE, [requests of each execution], block) -> (DONE, [outcomes]) until each execution
# has its outcome, in order: (error, responses, async_seq, block, held, rescheduled, start_ns,
# end_ns)
EXECUTE = 2
FINALIZE = 3  # (FINALIZE,) -> (DONE, error, None) and the stub exits
AUTO_COMPLETE = 4  # (AUTO_COMPLETE, settings dict) -> (DONE, error, config json)
DONE = 5

# stub -> server, on the async socket
RESPONSE = 10  # (RESPONSE, handle, response | None, flags, block)
BLS = 11  # (BLS, bls_id, BLS request, decoupled, block)
LOG = 13  # (LOG, level, message, filename, line)
CALL = 14  # (CALL, call_id, name, args) -> (REPLY, call_id, error, value)
READY_REPLY = 15  # (READY_REPLY, query_id, ready)
# (ATTACH,) with two fds: the server's sockets (receive, send) of a new channel for a process
# forked from the stub, which sends its own BLS requests, calls and log lines on it (it must
# not share this socket or the rings with the stub). Also sent on such a channel, by a process
# forked from that process.
ATTACH = 16

# server -> stub, on the async socket
BLS_RESPONSE = 20  # (BLS_RESPONSE, bls_id, response | None, flags, block)
REPLY = 21  # (REPLY, call_id, error, value)
READY_QUERY = 22  # (READY_QUERY, query_id)

# A response on the wire: (outputs, error, parameters json | None), error (code name, message)
# or None. A request of an EXECUTE: (handle, id, correlation_id, flags, timeout_us,
# parameters json, requested output names, inputs, GPU inputs). A BLS request: (model_name,
# model_version, id, correlation_id, flags, timeout_us, parameters json, requested output
# names, inputs, GPU inputs, the handle of the request whose trace it joins or None).
# Outputs and inputs are tensor descriptors (`shm_tensors`); GPU inputs are
# [(name, `cuda_ipc.CudaIpcArray`)] (None or [] when there are none).

# Triton's response flag (TRITONSERVER_RESPONSE_COMPLETE_FINAL).
FINAL = 1

_LEN = struct.Struct("<I")
_RECV_SIZE = 256 * 1024
_MAX_FDS = 16


def channel() -> tuple[Connection, tuple[socket.socket, socket.socket]]:
    """A new two-way channel: our end, and the peer's two sockets (the one it receives on,
    the one it sends on) to pass to it.

    Each direction has a socket pair of its own. On an AF_UNIX stream socket, reading what
    the peer sent wakes every thread blocked on the peer's socket (the kernel's write-space
    wake-up does not tell a blocked receive from a blocked send): on one shared pair, each
    command woke the server's thread waiting for the answer, and each answer woke the stub
    waiting for the next command, for nothing: two needless context switches per request.
    """
    to_peer, peer_receives = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    from_peer, peer_sends = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return Connection(from_peer, to_peer), (peer_receives, peer_sends)


class Connection:
    """One end of a channel carrying pickled frames, each with the fds sent alongside it:
    received on one socket, sent on another (see `channel`).

    `send` may be called from any thread. `recv` from one thread at a time.
    """

    def __init__(self, receiving: socket.socket, sending: socket.socket) -> None:
        self.sock = receiving
        self._sending = sending
        self._send_lock = threading.Lock()
        # Received bytes land in one reused buffer: frames are unpickled straight from it.
        self._buffer = bytearray(_RECV_SIZE)
        self._view = memoryview(self._buffer)
        self._start = 0
        self._end = 0
        self.fds: deque[int] = deque()
        self.closed = False
        # Frames sent so far: the peer counts the frames it has handled, so a later message
        # on another socket can say "after the first N of these".
        self.sent = 0
        self._ancillary = socket.CMSG_SPACE(_MAX_FDS * 4)

    def send(self, message: tuple, fds: Sequence[int] = ()) -> None:
        """Send one message, and `fds` with it (the caller still owns and closes them)."""
        data = pickle.dumps(message, 5)
        frame = _LEN.pack(len(data)) + data
        with self._send_lock:
            self.sent += 1
            if fds:
                sent = self._sending.sendmsg(
                    [frame], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(
                        f"{len(fds)}i", *fds))]
                )
                if sent < len(frame):
                    self._sending.sendall(frame[sent:])
            else:
                self._sending.sendall(frame)

    def recv(self) -> tuple:
        """The next message; EOFError when the peer has gone. Fds that came with it are
        queued on `fds`, in order, for whoever opens the message's block."""
        unpack = _LEN.unpack_from
        while True:
            start, end = self._start, self._end
            available = end - start
            needed = 4
            if available >= 4:
                (size,) = unpack(self._buffer, start)
                needed = 4 + size
                if available >= needed:
                    self._start = start + needed
                    return pickle.loads(self._view[start + 4 : start + needed])
            self._make_room(needed)
            count, ancillary, _flags, _addr = self.sock.recvmsg_into(
                [self._view[self._end :]], self._ancillary
            )
            if not count:
                self.closed = True
                raise EOFError("connection closed")
            self._end += count
            for level, kind, payload in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fd_count = len(payload) // 4
                    self.fds.extend(struct.unpack(f"{fd_count}i", payload[: fd_count * 4]))

    def messages(self) -> Iterator[tuple]:
        """Each message as it comes, until the peer has gone (or the socket failed)."""
        while True:
            try:
                yield self.recv()
            except (EOFError, OSError):
                return

    def _make_room(self, needed: int) -> None:
        """Room after the unread bytes for a frame of `needed` bytes (and then some)."""
        start, end = self._start, self._end
        if start == end:
            self._start = self._end = 0
            start = end = 0
        capacity = len(self._buffer)
        if capacity - start >= needed and capacity - end >= 4096:
            return
        pending = end - start
        if pending + max(needed - pending, 4096) > capacity or start == 0:
            size = max(capacity, needed + _RECV_SIZE)
            buffer = bytearray(size)
            buffer[:pending] = self._view[start:end]
            self._view.release()
            self._buffer, self._view = buffer, memoryview(buffer)
        else:
            self._view[:pending] = self._view[start:end]
        self._start, self._end = 0, pending

    def drop(self) -> None:
        """Close this process's descriptors of the sockets, and nothing more: a process forked
        after they were made keeps using them (`close` would shut them for it too)."""
        self.closed = True
        self.sock.close()
        self._sending.close()

    def close(self) -> None:
        """Shut the socket (the peer sees EOF) and close any fds nobody took."""
        self.closed = True
        for sock in (self.sock, self._sending):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        while self.fds:
            try:
                os.close(self.fds.popleft())
            except OSError:
                pass
