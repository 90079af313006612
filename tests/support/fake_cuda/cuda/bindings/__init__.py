"""A stand-in for cuda-python's `cuda.bindings` (runtime and driver) in which "device memory" is
a POSIX shared-memory object, so CPU-only tests can drive the CUDA shared-memory extension end
to end: a server process started with this folder first on its PYTHONPATH opens fake IPC
handles, copies to and from them and closes them through the same calls, the same signatures
and the same error texts as the real binding.

A fake handle is 64 bytes: `FAKECUDA` and the /dev/shm name of the object, NUL-padded
(`fake_handle`). TRITIUM_FAKE_CUDA_DEVICES (default 1) says how many devices exist. Only the
calls Tritium makes are here: a new call fails loudly (AttributeError).
"""

MAGIC = b"FAKECUDA"
HANDLE_SIZE = 64


def fake_handle(key: str) -> bytes:
    """The IPC handle of the fake allocation that is /dev/shm/<key>."""
    name = key.lstrip("/").encode()
    assert len(MAGIC) + len(name) <= HANDLE_SIZE, "key too long for a fake handle"
    return (MAGIC + name).ljust(HANDLE_SIZE, b"\0")
