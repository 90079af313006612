"""Worker threads that each own a synchronous client, for the futures and asyncio clients.

tritonclient's HTTP client runs on gevent, whose hub belongs to one thread: a client must be
made, used and closed on the same thread. So each worker makes its own client on its first
job, runs every later job on it, and closes it when told to stop. Workers start as jobs
arrive, up to max_workers; jobs wait in a queue of max_queue_size (None: unbounded).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

from .client_errors import PyTritonClientClosedError, PyTritonClientQueueFullError

ClientT = TypeVar("ClientT")

_Job = tuple[Future[Any], Callable[[Any], Any]]


class ClientPool(Generic[ClientT]):
    def __init__(self, owner: str, make_client: Callable[[], ClientT],
                 close_client: Callable[[ClientT], None], *, max_workers: int | None,
                 max_queue_size: int | None, non_blocking: bool,
                 queue_timeout_s: float | None) -> None:
        if max_workers is not None and max_workers <= 0:
            raise ValueError("max_workers must be greater than 0")
        if max_queue_size is not None and max_queue_size <= 0:
            raise ValueError("max_queue_size must be greater than 0")
        self._owner = owner  # the client class named in errors
        self._make_client = make_client
        self._close_client = close_client
        self._max_workers = max_workers
        self._non_blocking = non_blocking
        self._queue_timeout_s = queue_timeout_s
        # None tells a worker to stop; sent once per worker on close, after the queued jobs.
        self._jobs: queue.Queue[_Job | None] = queue.Queue(maxsize=max_queue_size or 0)
        self._workers: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, job: Callable[[ClientT], Any]) -> Future[Any]:
        """Run `job(client)` on a worker; its Future holds what it returns or raises."""
        future: Future[Any] = Future()
        # Under the lock, so that close() cannot slip its stop signals in ahead of this job.
        with self._lock:
            if self._closed:
                raise PyTritonClientClosedError(f"{self._owner} is closed")
            try:
                if self._non_blocking:
                    self._jobs.put_nowait((future, job))
                else:
                    self._jobs.put((future, job), timeout=self._queue_timeout_s)
            except queue.Full:
                raise PyTritonClientQueueFullError("Queue is full") from None
            # One more worker while jobs wait and the pool may grow (PyTriton's policy).
            if not self._jobs.empty() and (
                    self._max_workers is None or len(self._workers) < self._max_workers):
                worker = threading.Thread(target=self._work, daemon=True,
                                          name=f"pytriton-client-{len(self._workers)}")
                self._workers.append(worker)
                worker.start()
        return future

    def close(self, wait: bool = True) -> None:
        """Stop taking jobs; the queued ones still run. With wait, return once they have."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            workers = list(self._workers)
        for _ in workers:
            self._jobs.put(None)
        if wait:
            for worker in workers:
                worker.join()

    def _work(self) -> None:
        client: ClientT | None = None
        try:
            while (item := self._jobs.get()) is not None:
                future, job = item
                if not future.set_running_or_notify_cancel():
                    continue
                try:
                    if client is None:
                        client = self._make_client()
                    future.set_result(job(client))
                except BaseException as exc:  # the caller sees it through the Future
                    future.set_exception(exc)
        finally:
            if client is not None:
                self._close_client(client)
