"""Shared memory between the server and a stub: anonymous segments and the per-direction ring.

Shared memory is anonymous (memfd on Linux; elsewhere a POSIX segment unlinked as soon as it
is created): only file descriptors pass between the processes, so nothing is ever left in
/dev/shm, whatever way either process ends.

Both sides import this module, and the stub may run under another interpreter (an execution
environment), so it uses only the standard library.
"""

from __future__ import annotations

import mmap
import os
import threading


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
    """Map `size` bytes of a shared-memory fd, readable and writable by this process."""
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
    def create(cls, capacity: int, name: str) -> tuple[Ring, int]:
        """A new ring, and its fd for the peer to map (the caller closes it once passed on)."""
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
        """Unmap the region, unless numpy views of it are still alive."""
        try:
            self._consumed.release()
            self.buffer.release()
            self.mapping.close()
        except (BufferError, ValueError):
            pass  # numpy views still alive; the mapping goes when they do
