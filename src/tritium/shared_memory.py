"""Client shared memory (Triton's system and CUDA shared-memory extensions): the region registry.

A client puts tensors in a POSIX shared-memory object (`/dev/shm/<key>`) and registers a window
of it under a name; requests then name that region instead of carrying the bytes. Registering
maps the window read/write (as Triton's SharedMemoryManager does with mmap); unregistering
forgets the name and unmaps it. A request in flight holds views of the mapping, and the mapping
is released when the last of them goes (Triton's "unregistered after in-flight requests
complete").

Safety, beyond Triton: registration is off unless the server was started with
`--allow-client-shm=true`; a key must name one object directly in /dev/shm (no further '/', no
'.' or '..', symlinks are not followed, only regular files), and keys with a prefix the server
reserves for itself are refused. Views are bounds-checked against the registered window, never
against the whole object (Triton 2.51 bounds an offset by offset+size of the window, which lets
a request read past the mapping).

This server has no GPUs: the CUDA calls answer as Triton built with GPU support does on a machine
without one (status lists nothing, registration fails with Triton's "invalid args").
"""

from __future__ import annotations

import mmap
import os
import stat
import threading
from dataclasses import dataclass
from typing import Any

from .errors import TritonError

# Where POSIX shm_open objects live on Linux.
SHM_DIRECTORY = "/dev/shm"
# Key prefixes a client may never register: objects the server (or a Triton python backend next
# to it) owns. Tritium's python backend uses anonymous memfds today, so none of these names
# exists, and none ever may be a client's.
RESERVED_KEY_PREFIXES = ("tritium", "triton_python_backend")


@dataclass(eq=False)
class SystemRegion:
    """One registered window of a shared-memory object, mapped read/write."""

    name: str
    key: str
    offset: int
    byte_size: int
    mapping: mmap.mmap

    def status(self) -> dict[str, Any]:
        return {"name": self.name, "key": self.key, "offset": self.offset,
                "byte_size": self.byte_size}

    def view(self, offset: int, byte_size: int | None) -> memoryview:
        """`byte_size` bytes at `offset` in the window, bounds-checked with Triton's messages
        (a missing size is refused the way Triton 2.51's HTTP frontend refuses it)."""
        if offset >= self.byte_size:
            raise TritonError.invalid_arg(
                f"Invalid offset for shared memory region: '{self.name}'"
            )
        if byte_size is None or offset + byte_size > self.byte_size:
            raise TritonError.invalid_arg(
                f"Invalid offset + byte size for shared memory region: '{self.name}'"
            )
        return memoryview(self.mapping)[offset : offset + byte_size]

    def release(self) -> None:
        """Unmap now, or, while a request still holds a view, when the last view goes."""
        try:
            self.mapping.close()
        except BufferError:
            pass  # exported views keep the mapping; it is unmapped when they are freed


class SharedMemoryManager:
    """The registered regions of one server, by name (one namespace for system and CUDA)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._regions: dict[str, SystemRegion] = {}
        self._lock = threading.Lock()

    # -- system shared memory ------------------------------------------------------------------

    def register_system(self, name: str, key: str, offset: int, byte_size: int) -> None:
        """Map `byte_size` bytes at `offset` of the object `key` as region `name`."""
        if not self.enabled:
            raise _disabled()
        file_name = _object_name(key)
        with self._lock:
            if name in self._regions:
                raise _exists(name)
            fd = _open_object(key, file_name)
            try:
                if offset + byte_size > os.fstat(fd).st_size:
                    raise TritonError.invalid_arg(
                        f"failed to register shared memory region '{name}': invalid args"
                    )
                mapping = _map(fd, name, offset, byte_size)
            finally:
                os.close(fd)
            self._regions[name] = SystemRegion(name, key, offset, byte_size, mapping)

    def system_status(self, name: str = "") -> list[dict[str, Any]]:
        with self._lock:
            if not name:
                return [region.status() for region in self._regions.values()]
            region = self._regions.get(name)
        if region is None:
            raise TritonError.not_found(
                f"Unable to find system shared memory region: '{name}'"
            )
        return [region.status()]

    def unregister_system(self, name: str = "") -> None:
        """Forget region `name` (every region if empty); an unknown name is not an error."""
        with self._lock:
            if name:
                region = self._regions.pop(name, None)
                released = [region] if region is not None else []
            else:
                released = list(self._regions.values())
                self._regions.clear()
        for region in released:
            region.release()

    def region(self, name: str) -> SystemRegion:
        """The region a tensor names (NOT_FOUND, with Triton's message, if none)."""
        region = self._regions.get(name)
        if region is None:
            raise _unknown_region(name)
        return region

    # -- CUDA shared memory: a server without GPUs ---------------------------------------------

    def cuda_status(self, name: str = "") -> list[dict[str, Any]]:
        if not name:
            return []
        if name in self._regions:
            raise TritonError.not_found(
                f"The region named '{name}' is registered as system shared memory, not CUDA "
                "shared memory"
            )
        raise TritonError.not_found(f"Unable to find cuda shared memory region: '{name}'")

    def register_cuda(self, name: str) -> None:
        if not self.enabled:
            raise _disabled()
        if name in self._regions:
            raise _exists(name)
        # What Triton says when it cannot open the CUDA IPC handle (no GPU here).
        raise TritonError.invalid_arg("failed to register shared memory region: invalid args")

    def close(self) -> None:
        self.unregister_system()


def _unknown_region(name: object) -> TritonError:
    """The error for a tensor that names a region no client registered."""
    return TritonError.not_found(f"Unable to find shared memory region: '{name}'")


def _disabled() -> TritonError:
    return TritonError.unsupported(
        "shared memory registration is disabled on this server; start it with "
        "--allow-client-shm=true to allow clients to register shared memory regions"
    )


def _exists(name: str) -> TritonError:
    return TritonError.already_exists(f"shared memory region '{name}' already in manager")


def _unable_to_open(key: str) -> TritonError:
    return TritonError.internal(f"Unable to open shared memory region: '{key}'")


def _object_name(key: str) -> str:
    """The file name in /dev/shm that `key` names (shm_open's rules: one optional leading '/',
    no other '/', not '.' or '..'), refusing the server's reserved prefixes."""
    file_name = key[1:] if key.startswith("/") else key
    if not file_name or "/" in file_name or file_name in (".", "..") or "\0" in file_name:
        raise _unable_to_open(key)
    if file_name.startswith(RESERVED_KEY_PREFIXES):
        raise TritonError.invalid_arg(
            f"shared memory key '{key}' is reserved for the server's own use; choose a key "
            f"that does not start with '/{RESERVED_KEY_PREFIXES[0]}' or "
            f"'/{RESERVED_KEY_PREFIXES[1]}'"
        )
    return file_name


def _open_object(key: str, file_name: str) -> int:
    """Open the object read/write without following a symlink; only a regular file will do."""
    try:
        fd = os.open(os.path.join(SHM_DIRECTORY, file_name),
                     os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        raise _unable_to_open(key) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _unable_to_open(key)
    return fd


def _map(fd: int, name: str, offset: int, byte_size: int) -> mmap.mmap:
    # mmap(2) refuses a zero length and an offset that is not page-aligned with EINVAL; Triton
    # reports that as below. (Python's mmap would map the whole file for a zero length.)
    try:
        if byte_size == 0:
            raise OSError(22, "Invalid argument")
        return mmap.mmap(fd, byte_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE,
                         offset=offset)
    except (OSError, ValueError, OverflowError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "Invalid argument"
        raise TritonError.invalid_arg(
            f"failed to register shared memory region '{name}': unable to process address "
            f"space{reason}"
        ) from None
