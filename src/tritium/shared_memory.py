"""Client shared memory (Triton's system and CUDA shared-memory extensions): the region registry.

A client puts tensors in a POSIX shared-memory object (`/dev/shm/<key>`) and registers a window
of it under a name; requests then name that region instead of carrying the bytes. Registering
opens the object; unregistering forgets the name. Every window a request takes of a region (an
input's, read at decode; an output's, written after inference) counts as a use of the region
until the frontend has sent the request's answer (or, for a request that failed sooner, until
its window goes): while a request in flight names a region, unregistering it fails with
Triton's INTERNAL "Cannot unregister shared memory region '<name>', it is currently in use."
(unregister-all releases the free regions, then fails naming the busy ones). The open object
itself is closed when the registration and the last window holding it have gone.

The server never maps a client's object (Triton does): the client owns it and may truncate it at
any time, and touching a mapped page past a truncated object's end kills the whole process with
SIGBUS. Tensors are copied with pread/pwrite on the open descriptor instead, after checking the
object's current size (fstat), so a truncated object fails only the request that uses it, with
Triton's out-of-bounds message. A truncate racing that check is caught by the short read; a
write racing it grows the object back, never past the registered window. Reading a 4 MB input
this way takes about 0.2 ms, less than copying it out of a mapping (0.3 ms, page faults).

CUDA shared memory is the same with a GPU allocation: the client sends its CUDA IPC handle, the
server opens it on the named device (`cuda_ipc`, NVIDIA's cuda-python, loaded only then), and a
request's input is copied from the device once into host memory (the core carries numpy
arrays), an output copied to the device once. The IPC mapping is closed on unregister, or after
the last request in flight that writes into it. A server without GPUs answers as Triton 2.51
does on a machine without GPUs ("failed to register shared memory region: invalid args").

Safety, beyond Triton: registration is off unless the server was started with
`--allow-client-shm=true`; a key must name one object directly in /dev/shm (no further '/', no
'.' or '..', symlinks are not followed, only regular files), and keys with a prefix the server
reserves for itself are refused. Tensor windows are bounds-checked against the registered
region, never against the whole object (Triton 2.51 bounds an offset by offset+size of the
window, which lets a request read past the mapping).
"""

from __future__ import annotations

import logging
import mmap
import os
import stat
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from . import cuda_ipc
from .errors import TritonError
from .gpus import NO_GPUS, GpuInventory

log = logging.getLogger("tritium.shared_memory")

# Where POSIX shm_open objects live on Linux.
SHM_DIRECTORY = "/dev/shm"
# Key prefixes a client may never register: objects the server (or a Triton python backend next
# to it) owns. Tritium's python backend uses anonymous memfds today, so none of these names
# exists, and none ever may be a client's.
RESERVED_KEY_PREFIXES = ("tritium", "triton_python_backend")


# -- windows: the bytes one tensor names -----------------------------------------------------------


class ObjectFile:
    """A client's shared-memory object, open read/write: closed when its registration and every
    window a request in flight holds have let go (so an unregister never closes a descriptor a
    copy is using, and its number is never reused under one)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        weakref.finalize(self, os.close, fd).atexit = False

    def size(self) -> int:
        return os.fstat(self.fd).st_size


class _Use:
    """What makes a window a use of its region (`SharedMemoryManager.window`): the region is in
    use until the request lets go of the window (`let_go`, once answered) or, failing that,
    until the window goes."""

    __slots__ = ("_use", "__weakref__")

    def __init__(self) -> None:
        self._use: weakref.finalize[..., Any] | None = None

    def count_use(self, let_go: Callable[[], None]) -> None:
        self._use = weakref.finalize(self, let_go)
        self._use.atexit = False

    def let_go(self) -> None:
        """The request that took the window has been answered (counts down once)."""
        if self._use is not None:
            self._use()


class HostWindow(_Use):
    """A tensor's bytes in a system region: `byte_size` bytes at `start` of the object."""

    __slots__ = ("name", "file", "start", "byte_size")

    def __init__(self, name: str, file: ObjectFile, start: int, byte_size: int) -> None:
        super().__init__()
        self.name = name
        self.file = file
        self.start = start
        self.byte_size = byte_size

    def __len__(self) -> int:
        return self.byte_size

    def read(self) -> memoryview:
        """The window's bytes, copied out of the object (a short read is a truncated object)."""
        self._check_backed()
        view = np.empty(self.byte_size, dtype=np.uint8).data  # no zero-fill: all read
        done = 0
        while done < self.byte_size:
            got = os.preadv(self.file.fd, [view[done:]], self.start + done)
            if got <= 0:
                raise self._truncated()
            done += got
        return view

    def write(self, payload: np.ndarray) -> None:
        """Copy `payload` (uint8, at most len(self) bytes) to the window's start."""
        self._check_backed()
        view = np.ascontiguousarray(payload).data.cast("B")
        done = 0
        while done < len(view):
            done += os.pwrite(self.file.fd, view[done:], self.start + done)

    def _check_backed(self) -> None:
        if self.file.size() < self.start + self.byte_size:
            raise self._truncated()

    def _truncated(self) -> TritonError:
        # Triton's out-of-bounds message; the reason is what it cannot know: the client shrank
        # the object after registering it.
        return TritonError.invalid_arg(
            f"Invalid offset + byte size for shared memory region: '{self.name}' (its object "
            f"was truncated after registration; restore its size or register it again)"
        )


class DeviceWindow(_Use):
    """A tensor's bytes in a CUDA region. It keeps the region's device mapping open while it
    lives: a request holds its output windows until its response is written."""

    def __init__(self, region: CudaRegion, offset: int, byte_size: int) -> None:
        super().__init__()
        self.name = region.name
        self.device_id = region.device_id
        self.pointer = region.mapping.pointer + offset
        self.byte_size = byte_size
        region.mapping.acquire()
        weakref.finalize(self, region.mapping.release).atexit = False

    def __len__(self) -> int:
        return self.byte_size

    def read(self) -> memoryview:
        """The window's bytes, copied from the device once."""
        try:
            return cuda_ipc.copy_to_host(self.pointer, self.byte_size, self.device_id).data
        except cuda_ipc.CudaError as exc:
            raise TritonError.internal(
                f"failed to read CUDA shared memory region '{self.name}': {exc}") from None

    def write(self, payload: np.ndarray) -> None:
        try:
            cuda_ipc.copy_to_device(self.pointer, payload, self.device_id)
        except cuda_ipc.CudaError as exc:
            raise TritonError.internal(
                f"failed to write CUDA shared memory region '{self.name}': {exc}") from None


Window = HostWindow | DeviceWindow


def _checked_size(name: str, region_size: int, offset: int, byte_size: int | None) -> int:
    """`byte_size` if `byte_size` bytes at `offset` lie inside a region of `region_size` bytes;
    else Triton's messages (a missing size is refused the way Triton 2.51's HTTP frontend
    refuses it)."""
    if offset >= region_size:
        raise TritonError.invalid_arg(f"Invalid offset for shared memory region: '{name}'")
    if byte_size is None or offset + byte_size > region_size:
        raise TritonError.invalid_arg(
            f"Invalid offset + byte size for shared memory region: '{name}'"
        )
    return byte_size


# -- regions -------------------------------------------------------------------------------------


@dataclass(eq=False)
class SystemRegion:
    """One registered window of a shared-memory object, held open."""

    name: str
    key: str
    offset: int
    byte_size: int
    file: ObjectFile
    # Windows of it that are alive (requests in flight naming it): it cannot be unregistered.
    users: int = 0

    cuda = False

    def status(self) -> dict[str, Any]:
        return {"name": self.name, "key": self.key, "offset": self.offset,
                "byte_size": self.byte_size}

    def window(self, offset: int, byte_size: int | None) -> HostWindow:
        size = _checked_size(self.name, self.byte_size, offset, byte_size)
        return HostWindow(self.name, self.file, self.offset + offset, size)

    def release(self) -> None:
        """Nothing to do now: the object closes when the last window holding it goes."""


class DeviceMapping:
    """A client's device allocation opened in this process: closed when its registration and
    every window that a request in flight holds have let go."""

    def __init__(self, pointer: int, device_id: int) -> None:
        self.pointer = pointer
        self.device_id = device_id
        self._holders = 1  # the registration
        self._lock = threading.Lock()

    def acquire(self) -> None:
        with self._lock:
            self._holders += 1

    def release(self) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders:
                return
        try:
            cuda_ipc.close_handle(self.pointer, self.device_id)
        except cuda_ipc.CudaError as exc:  # nobody to answer: a request may be long gone
            log.error("failed to close CUDA IPC handle: %s", exc)


@dataclass(eq=False)
class CudaRegion:
    """One registered CUDA allocation (or its first `byte_size` bytes) on device `device_id`."""

    name: str
    device_id: int
    byte_size: int
    mapping: DeviceMapping
    # Windows of it that are alive (requests in flight naming it): it cannot be unregistered.
    users: int = 0

    cuda = True

    def status(self) -> dict[str, Any]:
        return {"name": self.name, "device_id": self.device_id, "byte_size": self.byte_size}

    def window(self, offset: int, byte_size: int | None) -> DeviceWindow:
        return DeviceWindow(self, offset,
                            _checked_size(self.name, self.byte_size, offset, byte_size))

    def release(self) -> None:
        self.mapping.release()


Region = SystemRegion | CudaRegion


class SharedMemoryManager:
    """The registered regions of one server, by name (one namespace for system and CUDA)."""

    def __init__(self, enabled: bool, gpus: GpuInventory = NO_GPUS) -> None:
        self.enabled = enabled
        self.gpus = gpus
        self._regions: dict[str, Region] = {}
        # Reentrant: a window dropped by the garbage collector while this thread holds the lock
        # counts its region's use down under it (`_let_go`).
        self._lock = threading.RLock()

    def register_system(self, name: str, key: str, offset: int, byte_size: int) -> None:
        """Map `byte_size` bytes at `offset` of the object `key` as region `name`."""
        if not self.enabled:
            raise _disabled()
        file_name = _object_name(key)
        with self._lock:
            if name in self._regions:
                raise _exists(name)
            file = ObjectFile(_open_object(key, file_name))
            if offset + byte_size > file.size():
                raise _invalid_args(name)
            _check_mappable(name, offset, byte_size)
            self._regions[name] = SystemRegion(name, key, offset, byte_size, file)

    def register_cuda(self, name: str, raw_handle: bytes, device_id: int,
                      byte_size: int) -> None:
        """Open the client's CUDA IPC handle on `device_id` as region `name` of `byte_size`
        bytes (Triton's checks and messages; the device must be one of this server's GPUs)."""
        if not self.enabled:
            raise _disabled()
        with self._lock:
            if name in self._regions:
                raise _exists(name)
            if not self.gpus.devices:
                # What Triton 2.51 answers on a machine without GPUs (it cannot open the CUDA
                # IPC handle), checked against the real server.
                raise TritonError.invalid_arg(
                    "failed to register shared memory region: invalid args")
            if self.gpus.device(device_id) is None:
                ids = ", ".join(str(d.device_id) for d in self.gpus.devices)
                raise _cuda_failed(name, f"device_id {device_id} is not a GPU of this server "
                                         f"(its CUDA device ids: {ids})")
            if len(raw_handle) != cuda_ipc.HANDLE_SIZE:
                raise _cuda_failed(name, f"'raw_handle' must be a cudaIpcMemHandle_t of "
                                         f"{cuda_ipc.HANDLE_SIZE} bytes, not {len(raw_handle)}")
            try:
                mapping = DeviceMapping(cuda_ipc.open_handle(raw_handle, device_id), device_id)
            except cuda_ipc.CudaError as exc:
                raise _cuda_failed(name, str(exc)) from None
            try:
                available = cuda_ipc.allocation_bytes_from(mapping.pointer)
            except cuda_ipc.CudaError as exc:
                log.error("failed to get CUDA address range: %s", exc)
                available = -1
            if byte_size > available:
                mapping.release()
                raise _invalid_args(name)
            self._regions[name] = CudaRegion(name, device_id, byte_size, mapping)

    def system_status(self, name: str = "") -> list[dict[str, Any]]:
        return self._status(name, cuda=False)

    def cuda_status(self, name: str = "") -> list[dict[str, Any]]:
        return self._status(name, cuda=True)

    def unregister_system(self, name: str = "") -> None:
        """Forget system region `name` (every one if empty); an unknown name is no error, one
        in use by a request in flight is (see `_unregister`)."""
        self._unregister(name, cuda=False)

    def unregister_cuda(self, name: str = "") -> None:
        """Forget CUDA region `name` (every one if empty); an unknown name is no error, one in
        use by a request in flight is (see `_unregister`)."""
        self._unregister(name, cuda=True)

    def window(self, name: str, offset: int, byte_size: int | None) -> Window:
        """The bytes of region `name` that a tensor names, bounds-checked (NOT_FOUND or
        INVALID_ARG with Triton's messages). The region is in use until the request lets go of
        the window (`let_go`) or the window goes. Taken under the lock, so an unregister cannot
        release the region between finding it and counting the use."""
        with self._lock:
            region = self._regions.get(name)
            if region is None:
                raise TritonError.not_found(f"Unable to find shared memory region: '{name}'")
            window = region.window(offset, byte_size)
            region.users += 1
        window.count_use(partial(self._let_go, region))
        return window

    def _let_go(self, region: Region) -> None:
        """A use of `region` has ended (from whichever thread let go of its window)."""
        with self._lock:
            region.users -= 1

    def close(self) -> None:
        """The server stops: every region goes, in use or not (what a request still holds
        closes when it lets go)."""
        with self._lock:
            released, self._regions = list(self._regions.values()), {}
        for region in released:
            region.release()

    def _status(self, name: str, cuda: bool) -> list[dict[str, Any]]:
        kind = "cuda" if cuda else "system"
        with self._lock:
            if not name:
                return [r.status() for r in self._regions.values() if r.cuda is cuda]
            region = self._regions.get(name)
        if region is None:
            raise TritonError.not_found(f"Unable to find {kind} shared memory region: '{name}'")
        if region.cuda is not cuda:
            registered, asked = ("CUDA", "system") if region.cuda else ("system", "CUDA")
            raise TritonError.not_found(
                f"The region named '{name}' is registered as {registered} shared memory, not "
                f"{asked} shared memory"
            )
        return [region.status()]

    def _unregister(self, name: str, cuda: bool) -> None:
        """Triton's rules: a region in use stays registered; unregistering it by name fails,
        unregistering all releases the others and then fails naming the busy ones (sorted, as
        Triton's map holds them)."""
        with self._lock:
            names = [name] if name else sorted(self._regions)
            mine = [n for n in names if n in self._regions and self._regions[n].cuda is cuda]
            busy = [n for n in mine if self._regions[n].users]
            if name and busy:
                raise TritonError.internal(
                    f"Cannot unregister shared memory region '{name}', it is currently in use.")
            released = [self._regions.pop(n) for n in mine if n not in busy]
        for region in released:
            region.release()
        if busy:
            kind = "cuda" if cuda else "system"
            message = (f"Failed to unregister the following {kind} shared memory regions: "
                       + "".join(f"{n} ," for n in busy))
            log.error("%s", message)
            raise TritonError.internal(message)


def _disabled() -> TritonError:
    return TritonError.unsupported(
        "shared memory registration is disabled on this server; start it with "
        "--allow-client-shm=true to allow clients to register shared memory regions"
    )


def _exists(name: str) -> TritonError:
    return TritonError.already_exists(f"shared memory region '{name}' already in manager")


def _invalid_args(name: str) -> TritonError:
    """A window larger than what backs it (the object, or the CUDA allocation)."""
    return TritonError.invalid_arg(
        f"failed to register shared memory region '{name}': invalid args"
    )


def _cuda_failed(name: str, reason: str) -> TritonError:
    return TritonError.invalid_arg(
        f"failed to register CUDA shared memory region '{name}': {reason}"
    )


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


def _check_mappable(name: str, offset: int, byte_size: int) -> None:
    """Triton maps the window at registration, and mmap(2) refuses a zero length and an offset
    that is not page-aligned with EINVAL; registration fails the same way here, as Triton's."""
    if byte_size == 0 or offset % mmap.ALLOCATIONGRANULARITY:
        raise TritonError.invalid_arg(
            f"failed to register shared memory region '{name}': unable to process address "
            f"spaceInvalid argument"
        )
