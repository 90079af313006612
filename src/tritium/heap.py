"""The server's long-lived objects, kept out of the cyclic garbage collector's way.

Python's collector now and then walks every object that survived earlier collections: in a
server that is every model, configuration, protobuf and module loaded at start, thousands of
objects walked while every request waits. Those pauses were the tail of the latency (add_sub at
concurrency 32: p99 16 ms with them, 6 ms without). Once the server has started, what is alive
is long-lived: `settle` freezes it (gc.freeze), so that collections walk only what requests
made since. A frozen object the server lets go of later (an unloaded model) is still freed by
reference counting; `release` lets the collector see the frozen objects again for the cycles
among them, then freezes what is left.

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

import gc
import threading

_lock = threading.Lock()

# Container objects allocated (net) between two young-generation collections.
YOUNG_THRESHOLD = 10_000


def settle() -> None:
    """Everything alive now lives as long as the server: collect, then freeze the rest; and
    collect young objects less often."""
    with _lock:
        gc.collect()
        gc.freeze()
        gc.set_threshold(YOUNG_THRESHOLD, *gc.get_threshold()[1:])


def release() -> None:
    """Long-lived objects were let go of (a model unloaded): collect their cycles too."""
    with _lock:
        if not gc.get_freeze_count():
            return
        gc.unfreeze()
        gc.collect()
        gc.freeze()
