"""The server's long-lived objects, kept out of the cyclic garbage collector's way.

Python's collector now and then walks every object that survived earlier collections: in a
server that is every model, configuration, protobuf and module loaded at start, thousands of
objects walked while every request waits. Those pauses were the tail of the latency (add_sub at
concurrency 32: p99 16 ms with them, 6 ms without). Once the server has started, what is alive
is long-lived: `settle` freezes it (gc.freeze), so that collections walk only what requests
made since. A frozen object the server lets go of later (an unloaded model) is still freed by
reference counting; `release` lets the collector see the frozen objects again for the cycles
among them, then freezes what is left. That full collection holds the GIL for its whole walk
(0.2 s for a bare server, far more with torch loaded, and more still with thousands of requests
in flight), so it runs once unloads have paused for `QUIET_S`, on a thread of its own: a storm of
2,000 load/unload requests had unloaded the model ~50 times, each unload collecting, and a good
client's call on another model waited 13 s behind them.

That collection then hands the memory the unloads freed back to the system (glibc's
malloc_trim). glibc gives back only the free top of its heap on its own, so what an unloaded
model's native allocations left free below live chunks stayed in the process: an ONNX model
loaded and unloaded 3,000 times left the server's heap between 53 and 91 MiB at the quiet
moments (no growth: the same 53 MiB after a trim at the end), where with the trim every quiet
moment reads 52-55 MiB. It is fragmentation, not a leak, as Triton's model management guide says
of its own load/unload growth; the trim runs where the pause already is, off the GIL.

Settled, the server also lets the young generation grow to `YOUNG_THRESHOLD` container objects
(Python's default is 700) before a collection. Under load almost everything young is alive, the
requests in flight (32 of them are ~900 objects), and a collection walks it all to free
nothing: measured at concurrency 32 with gc.callbacks, 300-580 collections a second, 35-60 us
each, none freeing anything. Requests make no garbage cycles of their own, so collecting 14
times less often costs no memory worth counting; it gave 3-5 % more inferences a second
(add_sub gRPC, identity_fp32 HTTP, c=32, 3 alternating pairs).

A process that never settles (Tritium embedded in a program) is left as it is.
"""

from __future__ import annotations

import ctypes
import gc
import threading
import time
from collections.abc import Callable

_lock = threading.Lock()

# Container objects allocated (net) between two young-generation collections.
YOUNG_THRESHOLD = 10_000
# A release collects once no other came for this long, and within MAX_DEFER_S of the first.
QUIET_S = 5.0
MAX_DEFER_S = 60.0


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, or None where the C library has none (musl, macOS)."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


# Called with 0 after each release's collection (ctypes drops the GIL for the call).
give_back = _malloc_trim()


class _Due:
    """The releases not yet collected for (guarded by `_lock`)."""

    settled = False  # not gc.get_freeze_count(): it walks every frozen object (6 ms)
    # When the oldest came; None: nothing to collect (and no collector thread waiting).
    first: float | None = None
    last = 0.0


def settle() -> None:
    """Everything alive now lives as long as the server: collect, then freeze the rest; and
    collect young objects less often."""
    with _lock:
        gc.collect()
        gc.freeze()
        _Due.settled = True
        gc.set_threshold(YOUNG_THRESHOLD, *gc.get_threshold()[1:])


def release() -> None:
    """Long-lived objects were let go of (a model unloaded): collect their cycles too, soon
    (see the module's text); returns at once."""
    with _lock:
        if not _Due.settled:
            return
        _Due.last = time.monotonic()
        if _Due.first is None:
            _Due.first = _Due.last
            threading.Thread(target=_collect_when_quiet, name="heap-release", daemon=True).start()


def _collect_when_quiet() -> None:
    while True:
        with _lock:
            assert _Due.first is not None
            wait = min(_Due.last + QUIET_S, _Due.first + MAX_DEFER_S) - time.monotonic()
            if wait <= 0:
                _Due.first = None
                gc.unfreeze()
                gc.collect()
                gc.freeze()
                break
        time.sleep(wait)
    if give_back is not None:
        give_back(0)
