"""The asyncio event loop a model's coroutines run on (`async def execute`, `is_ready`).

Triton's stub runs a model's coroutines on one event loop of its own, on a thread of its own,
started when the first one comes: a coroutine `execute` of a default model is waited for, a
decoupled model's runs in the background (its responses go out through response senders),
and an exception one raises in the background is logged. Its own module because the stub's
threads only hand coroutines over; the loop, its thread and what is left running are this
module's.
"""

from __future__ import annotations

import asyncio
import threading
import traceback
from collections.abc import Callable
from typing import Any


class ModelEventLoop:
    """The loop, started on first use; `on_start` runs first on its thread (the GPU made
    current there), `log_error` gets the traceback of a background coroutine that failed."""

    def __init__(self, on_start: Callable[[], None] | None,
                 log_error: Callable[[str], None]) -> None:
        self._on_start = on_start
        self._log_error = log_error
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._background: set = set()

    def run(self, coroutine: Any) -> Any:
        """Run `coroutine` on the loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._started()).result()

    def run_in_background(self, coroutine: Any) -> None:
        """Run `coroutine` on the loop without waiting for it."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self._started())
        self._background.add(future)
        future.add_done_callback(self._background_done)

    def stop(self) -> None:
        """Stop the loop, if it was started (the model is finalizing)."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                if self._on_start is not None:
                    loop.call_soon(self._on_start)
                threading.Thread(target=loop.run_forever, name="stub-asyncio",
                                 daemon=True).start()
                self._loop = loop
            return self._loop

    def _background_done(self, future: Any) -> None:
        self._background.discard(future)
        if future.cancelled():
            return
        exc = future.exception()
        if exc is not None:
            self._log_error("".join(traceback.format_exception(exc)))
