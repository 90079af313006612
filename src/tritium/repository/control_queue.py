"""Load and unload requests queued per model and run on a bounded pool of workers.

A load or unload blocks until the model settles (seconds for a large model), and a client may
send thousands of them at once. Given a thread each, as the frontends once did, a storm of them
held every thread of the shared pool waiting on the model's lock and ran every request in turn,
one full load or unload after another (2,000 requests took 198 s, and a good client timed out).
Here a request only joins its model's queue and gets a future; each model's queue is run by one
worker at a time, from a pool of `--model-load-thread-count` workers, so other models load in
parallel and inference (which uses none of these threads) is never starved.

Requests waiting in one model's queue together are concurrent: none has been answered, so
running them in any order is as if they had arrived in that order. Identical ones (same kind,
same parameters) are run once and all answered with its outcome; the different kinds waiting
run in the order of their latest request, so the model ends in the state the last request asked
for. A storm of N requests thus costs a few executions per load or unload time, not N.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor

from ..errors import TritonError

Work = Callable[[], None]


class _Group:
    """Identical requests waiting together: one execution answers them all."""

    __slots__ = ("work", "futures")

    def __init__(self, work: Work) -> None:
        self.work = work
        self.futures: list[Future[None]] = []


class _ModelQueue:
    __slots__ = ("pending", "running")

    def __init__(self) -> None:
        # Waiting groups by request key, in the order of their latest request.
        self.pending: OrderedDict[Hashable, _Group] = OrderedDict()
        self.running = False  # a worker is running this model's queue


class ModelControlQueue:
    """Runs load/unload work one request kind at a time per model (see the module's text)."""

    def __init__(self, workers: int) -> None:
        self._pool = ThreadPoolExecutor(max(workers, 1), thread_name_prefix="model-control")
        self._lock = threading.Lock()
        self._models: dict[str, _ModelQueue] = {}
        self._closed = False
        # Set on a worker while it runs work: a model that loads another model while it loads
        # (a backend calling the server's load) runs that load at once, as Triton's does, rather
        # than waiting for a worker that may be itself.
        self._local = threading.local()

    def submit(self, model: str, key: Hashable, work: Work) -> Future[None]:
        """Queue `work` (a load or unload of `model`; `key` says which requests are the same);
        the future has its outcome."""
        future: Future[None] = Future()
        # Taken in hand now: a client going away cannot cancel it (the work may have started
        # for others); its outcome is simply not read.
        future.set_running_or_notify_cancel()
        if getattr(self._local, "working", False):
            _run(work, [future])
            return future
        with self._lock:
            if self._closed:
                future.set_exception(TritonError.unavailable("the server is exiting"))
                return future
            queue = self._models.get(model)
            if queue is None:
                queue = self._models[model] = _ModelQueue()
            group = queue.pending.get(key)
            if group is None:
                group = queue.pending[key] = _Group(work)
            else:
                queue.pending.move_to_end(key)
            group.futures.append(future)
            if not queue.running:
                queue.running = True
                self._pool.submit(self._drain, model, queue)
        return future

    def run(self, model: str, key: Hashable, work: Work) -> None:
        """`submit` and wait for the outcome (raises what the work raised)."""
        self.submit(model, key, work).result()

    def _drain(self, model: str, queue: _ModelQueue) -> None:
        """Run the model's waiting groups, oldest latest request first, until none is left."""
        self._local.working = True
        try:
            while True:
                with self._lock:
                    if not queue.pending:
                        queue.running = False
                        del self._models[model]
                        return
                    _, group = queue.pending.popitem(last=False)
                _run(group.work, group.futures)
        finally:
            self._local.working = False

    def close(self) -> None:
        """The server is exiting: take no new request (work queued or running goes on)."""
        with self._lock:
            self._closed = True
        self._pool.shutdown(wait=False)


def _run(work: Work, futures: list[Future[None]]) -> None:
    try:
        work()
    except BaseException as exc:  # noqa: BLE001 - every waiting client hears the failure
        for future in futures:
            future.set_exception(exc)
        return
    for future in futures:
        future.set_result(None)
