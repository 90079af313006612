"""The wire between the server and a stub process: control frames on a socket, tensors in
shared memory.

Both sides import this module, and the stub may run under another interpreter (an execution
environment) that has numpy but not the server's dependencies, so it uses only numpy and the
standard library.

Control messages are tuples of plain values (str, int, float, bytes, lists, dicts), pickled and
sent as length-prefixed frames on an AF_UNIX stream socket. Tensor bytes never travel in them:
each message that carries tensors first reserves one *block* for all of them, either in the
sender's ring (a shared-memory region per direction, mapped by both processes) or, when the ring
has no room, in a one-off segment whose file descriptor rides with the frame (SCM_RIGHTS). A
tensor in a message is `(name, datatype, shape, offset, nbytes)`, its bytes at `offset` within
the message's block. BYTES tensors travel in Triton's serialised form (4-byte length before
each element).

Shared memory is anonymous (memfd on Linux; elsewhere a POSIX segment unlinked as soon as it
is created): only file descriptors pass between the processes, so nothing is ever left in
/dev/shm, whatever way either process ends.
"""

from __future__ import annotations

import mmap
import os
import pickle
import socket
import struct
import threading
from collections import deque
from typing import Any, Callable, Sequence

import numpy as np

# -- message kinds ---------------------------------------------------------------------------
# server -> stub, on the exec socket (each answered on the same socket, in order)
INIT = 1  # (INIT, settings dict) -> (DONE, error, info dict)
EXECUTE = 2  # (EXECUTE, requests, block) -> (DONE, error, responses, async_seq, block)
FINALIZE = 3  # (FINALIZE,) -> (DONE, error, None) and the stub exits
AUTO_COMPLETE = 4  # (AUTO_COMPLETE, settings dict) -> (DONE, error, config json)
DONE = 5

# stub -> server, on the async socket
RESPONSE = 10  # (RESPONSE, handle, response | None, flags, block)
BLS = 11  # (BLS, bls_id, request, decoupled, block)
BLS_CANCEL = 12  # (BLS_CANCEL, bls_id)
LOG = 13  # (LOG, level, message, filename, line)
CALL = 14  # (CALL, call_id, name, args) -> (REPLY, call_id, error, value)
READY_REPLY = 15  # (READY_REPLY, query_id, ready)

# server -> stub, on the async socket
BLS_RESPONSE = 20  # (BLS_RESPONSE, bls_id, response | None, flags, block)
REPLY = 21  # (REPLY, call_id, error, value)
READY_QUERY = 22  # (READY_QUERY, query_id)

# A response on the wire: (outputs, error, parameters) with error (code name, message) | None.
# A request on the wire: (handle, id, correlation_id, flags, timeout_us, parameters json,
#                         requested output names, inputs, model_name, model_version)

# Triton's response flag (TRITONSERVER_RESPONSE_COMPLETE_FINAL).
FINAL = 1

ALIGN = 64
_LEN = struct.Struct("<I")
_U32 = struct.Struct("<I")
_RECV_SIZE = 256 * 1024
_MAX_FDS = 16

# Wire datatype -> numpy dtype (BF16 has no numpy type: its elements travel as uint16).
NUMPY_DTYPES: dict[str, np.dtype] = {
    "BOOL": np.dtype(np.bool_),
    "UINT8": np.dtype(np.uint8),
    "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32),
    "UINT64": np.dtype(np.uint64),
    "INT8": np.dtype(np.int8),
    "INT16": np.dtype(np.int16),
    "INT32": np.dtype(np.int32),
    "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16),
    "FP32": np.dtype(np.float32),
    "FP64": np.dtype(np.float64),
    "BF16": np.dtype(np.uint16),
    "BYTES": np.dtype(np.object_),
}
_WIRE_FROM_NUMPY: dict[np.dtype, str] = {
    dt: name for name, dt in NUMPY_DTYPES.items() if name != "BF16"
}


def wire_datatype(dtype: np.dtype) -> str:
    dtype = np.dtype(dtype)
    if dtype.kind in ("S", "U", "O"):
        return "BYTES"
    try:
        return _WIRE_FROM_NUMPY[dtype]
    except KeyError:
        raise TypeError(f"numpy dtype {dtype} has no Triton datatype") from None


# -- shared memory ---------------------------------------------------------------------------


def create_shared_fd(size: int, name: str = "tritium") -> int:
    """A file descriptor of `size` bytes of shared memory that no name refers to."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create(name, os.MFD_CLOEXEC)
    else:  # pragma: no cover - non-Linux POSIX
        import _posixshmem  # type: ignore[import-not-found]

        while True:
            shm_name = f"/{name}_{os.getpid()}_{os.urandom(6).hex()}"
            try:
                fd = _posixshmem.shm_open(shm_name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
            except FileExistsError:
                continue
            _posixshmem.shm_unlink(shm_name)
            break
    try:
        if size:
            os.ftruncate(fd, size)
    except BaseException:
        os.close(fd)
        raise
    return fd


def map_fd(fd: int, size: int) -> mmap.mmap:
    return mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)


class Ring:
    """One direction's shared region, used as a ring of blocks.

    Positions are monotonic byte counts; a block lives at `position % capacity` and never wraps
    (an allocation that would is moved to the start, the skipped tail counted as part of it).
    The producer keeps the head in its own memory; the consumer publishes in the header how far
    it has consumed, advancing only over a released prefix (blocks may be released out of
    order). The producer never waits: when the ring has no room the caller uses a one-off
    segment instead.
    """

    HEADER = 64

    def __init__(self, fd: int, capacity: int) -> None:
        self.capacity = capacity
        self.mapping = map_fd(fd, self.HEADER + capacity)
        self.buffer = memoryview(self.mapping)
        self._consumed = self.buffer[:8].cast("Q")
        # producer side
        self._head = 0
        self._produce_lock = threading.Lock()
        # consumer side
        self._position = 0
        self._pending: dict[int, int] = {}
        self._consume_lock = threading.Lock()

    @classmethod
    def create(cls, capacity: int, name: str) -> tuple["Ring", int]:
        fd = create_shared_fd(cls.HEADER + capacity, name)
        return cls(fd, capacity), fd

    def alloc(self, nbytes: int) -> tuple[int, int, int] | None:
        """Reserve `nbytes`: (start, end, offset in `buffer`), or None if there is no room."""
        capacity = self.capacity
        if nbytes > capacity:
            return None
        with self._produce_lock:
            start = head = self._head
            offset = head % capacity
            if offset + nbytes > capacity:
                head += capacity - offset
                offset = 0
            end = head + nbytes
            if end - self._consumed[0] > capacity:
                return None
            self._head = end
            return start, end, self.HEADER + offset

    def release(self, start: int, end: int) -> None:
        """Consumer: the block [start, end) is no longer used."""
        with self._consume_lock:
            if start != self._position:
                self._pending[start] = end
                return
            pending = self._pending
            while end in pending:
                end = pending.pop(end)
            self._position = end
            self._consumed[0] = end

    def close(self) -> None:
        try:
            self._consumed.release()
            self.buffer.release()
            self.mapping.close()
        except (BufferError, ValueError):
            pass  # numpy views still alive; the mapping goes when they do


# -- tensors ---------------------------------------------------------------------------------


def serialize_bytes(array: np.ndarray) -> bytes:
    """BYTES tensor -> Triton's length-prefixed form (row-major order)."""
    parts: list[bytes] = []
    append = parts.append
    pack = _U32.pack
    for item in array.reshape(-1):
        if isinstance(item, str):
            item = item.encode("utf-8")
        elif not isinstance(item, (bytes, bytearray, memoryview)):
            if isinstance(item, np.bytes_):
                item = bytes(item)
            else:
                item = str(item).encode("utf-8")
        append(pack(len(item)))
        append(bytes(item))
    return b"".join(parts)


def deserialize_bytes(buffer: Any, count: int | None = None) -> np.ndarray:
    """Triton's length-prefixed form -> 1-D object array of bytes."""
    view = memoryview(buffer)
    items: list[bytes] = []
    offset, size = 0, len(view)
    unpack = _U32.unpack_from
    while offset + 4 <= size and (count is None or len(items) < count):
        (length,) = unpack(view, offset)
        offset += 4
        items.append(bytes(view[offset : offset + length]))
        offset += length
    out = np.empty(len(items), dtype=np.object_)
    out[:] = items
    return out


class Block:
    """Where one message's tensors live while the receiver uses them."""

    __slots__ = ("buffer", "base", "_release", "shared")

    def __init__(self, buffer: Any, base: int, release: Callable[[], None] | None,
                 shared: bool) -> None:
        self.buffer = buffer
        self.base = base
        self._release = release
        # True when the bytes are in a ring, to be reused once released; False for a one-off
        # segment, which lives as long as the arrays viewing it.
        self.shared = shared

    def release(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release()

    def array(self, datatype: str, shape: tuple, offset: int, nbytes: int,
              copy: bool) -> np.ndarray:
        start = self.base + offset
        if datatype == "BYTES":
            count = 1
            for d in shape:
                count *= d
            flat = deserialize_bytes(memoryview(self.buffer)[start : start + nbytes], count)
            return flat.reshape(shape)
        dtype = NUMPY_DTYPES[datatype]
        if not nbytes:
            return np.empty(shape, dtype)
        array = np.ndarray(shape, dtype, self.buffer, start)
        return array.copy() if copy and self.shared else array


# Above this size a tensor is copied into shared memory straight from its buffer; below it,
# through bytes (fewer Python-level steps).
_DIRECT_COPY_BYTES = 1 << 16


class TensorWriter:
    """Packs the tensors of one outgoing message into one block."""

    def __init__(self, ring: Ring, name: str) -> None:
        self.ring = ring
        self.name = name

    def pack(self, tensors: Sequence[tuple[str, str, np.ndarray]]) -> tuple[list, Any, list[int]]:
        """[(name, datatype, array)] -> (descriptors, block descriptor, fds to send)."""
        if not tensors:
            return [], None, []
        staged = []
        total = 0
        for name, datatype, array in tensors:
            if datatype == "BYTES":
                data: Any = serialize_bytes(array)
                nbytes = len(data)
            else:
                data = array
                nbytes = array.nbytes
            staged.append((name, datatype, array.shape, data, nbytes))
            total += (nbytes + ALIGN - 1) & ~(ALIGN - 1)
        reserved = self.ring.alloc(total) if total else (0, 0, Ring.HEADER)
        fd = -1
        if reserved is not None:
            buffer = self.ring.buffer
            base = reserved[2]
            block: Any = reserved
            fds: list[int] = []
        else:
            fd = create_shared_fd(total, self.name)
            segment = map_fd(fd, total)
            buffer = memoryview(segment)
            base = 0
            block = -1
            fds = [fd]
        descriptors = []
        at = base
        try:
            for name, datatype, shape, data, nbytes in staged:
                if nbytes:
                    if datatype == "BYTES":
                        buffer[at : at + nbytes] = data
                    elif nbytes <= _DIRECT_COPY_BYTES or not data.flags.c_contiguous:
                        buffer[at : at + nbytes] = data.tobytes()
                    else:
                        buffer[at : at + nbytes] = data.data.cast("B")
                descriptors.append((name, datatype, shape, at - base, nbytes))
                at += (nbytes + ALIGN - 1) & ~(ALIGN - 1)
        finally:
            if fd >= 0:
                buffer.release()
                segment.close()
        return descriptors, block, fds


def open_block(block: Any, ring: Ring, fds: deque) -> Block | None:
    """The receiver's view of a message's block (None when the message has no tensors)."""
    if block is None:
        return None
    if block == -1:
        fd = fds.popleft()
        try:
            size = os.fstat(fd).st_size
            segment = map_fd(fd, size) if size else b""
        finally:
            os.close(fd)
        # numpy views keep the mapping alive; it goes when the last one does.
        return Block(segment, 0, None, False)
    start, end, base = block
    if start == end:
        return Block(ring.mapping, base, None, True)
    return Block(ring.mapping, base, lambda: ring.release(start, end), True)


def read_tensors(descriptors: Sequence[tuple], block: Block | None, copy: bool) -> list:
    """[(name, datatype, array)] from a message's descriptors."""
    if not descriptors:
        return []
    assert block is not None
    return [(name, datatype, block.array(datatype, shape, offset, nbytes, copy))
            for name, datatype, shape, offset, nbytes in descriptors]


# -- control frames --------------------------------------------------------------------------


class Connection:
    """One end of a socket carrying pickled frames, each with the fds sent alongside it.

    `send` may be called from any thread. `recv` from one thread at a time.
    """

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
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

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, message: tuple, fds: Sequence[int] = ()) -> None:
        data = pickle.dumps(message, 5)
        frame = _LEN.pack(len(data)) + data
        with self._send_lock:
            self.sent += 1
            if fds:
                sent = self.sock.sendmsg(
                    [frame], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(
                        f"{len(fds)}i", *fds))]
                )
                if sent < len(frame):
                    self.sock.sendall(frame[sent:])
            else:
                self.sock.sendall(frame)

    def recv(self) -> tuple:
        """The next message; EOFError when the peer has gone."""
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

    def close(self) -> None:
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        while self.fds:
            try:
                os.close(self.fds.popleft())
            except OSError:
                pass


def error_tuple(code: str, message: str) -> tuple[str, str]:
    return (code, message)
