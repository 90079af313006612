"""The owning server's side of an actor's requests (server side of `owner_link.py`).

Each event the actor streams is handled here, on the thread reading that actor's stream, in
order: BLS requests are routed by the owning server like any client's (responses streamed back
with `deliver`), metric families and metrics live in the owner's registry (so /metrics shows
them), log records are logged by the owner. Calls that may block (readiness of a model, whose
instances may be this one; loading a model) are answered from a worker thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ..custom_metrics import Metric, MetricFamily, MetricKind, MetricRegistry
from ..errors import TritonError
from ..request import InferenceRequest, InferenceResponse
from . import wire

if TYPE_CHECKING:
    from ..backend.server_api import ServerApi

log = logging.getLogger("tritium.ray")


class SharedFamilies:
    """Custom metric families the server's actors use, each with its number of users: a family
    made by several actors (or models) is removed once the last lets go, as the python backend
    does for its stubs."""

    def __init__(self, registry: MetricRegistry) -> None:
        self._registry = registry
        self._users: dict[str, list[Any]] = {}  # name -> [family, users]
        self._lock = threading.Lock()

    def acquire(self, name: str, description: str, kind: MetricKind) -> MetricFamily:
        with self._lock:
            family = self._registry.family(name, description, kind)
            entry = self._users.setdefault(name, [family, 0])
            entry[1] += 1
            return family

    def release(self, family: MetricFamily) -> None:
        with self._lock:
            entry = self._users.get(family.name)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] <= 0:
                del self._users[family.name]
                self._registry.remove(family)


class OwnerCalls:
    """Answers one actor: `handle(batch)` for each streamed batch of its events."""

    def __init__(self, server: ServerApi, families: SharedFamilies, pool: ThreadPoolExecutor,
                 actor: Any, lookup: Callable[[int], InferenceRequest | None],
                 respond: Callable[[int, InferenceResponse | None, int], None]) -> None:
        self._server = server
        self._families_shared = families
        self._pool = pool
        self._actor = actor
        self._lookup = lookup
        self._respond = respond
        self._families: dict[int, MetricFamily] = {}
        self._metrics: dict[tuple[int, int], tuple[MetricFamily, Metric]] = {}
        self._next_family = 1
        self._handlers: dict[str, Callable[..., Any]] = {
            "response": self._response,
            "infer": self._infer,
            "is_cancelled": self._is_cancelled,
            "metric_family": self._metric_family,
            "metric_family_remove": self._metric_family_remove,
            "metric_new": self._metric_new,
            "metric_update": self._metric_update,
            "metric_remove": self._metric_remove,
            "log": self._log,
        }
        self._blocking: dict[str, Callable[..., Any]] = {
            "model_ready": lambda name, version: server.model_ready(name, version),
            "load_model": server.load_model,
            "unload_model": server.unload_model,
        }

    def handle(self, batch: list[tuple]) -> None:
        for kind, call_id, name, args in batch:
            blocking = self._blocking.get(name)
            if blocking is not None:
                self._pool.submit(self._answer, call_id, blocking, args)
            elif kind == "call":
                self._answer(call_id, self._handlers[name], args)
            else:
                try:
                    self._handlers[name](*args)
                except Exception:
                    log.exception("handling '%s' from a Ray instance failed", name)

    def _answer(self, call_id: int, handler: Callable[..., Any], args: tuple) -> None:
        error = value = None
        try:
            value = handler(*args)
        except Exception as exc:
            error = wire.error_to_wire(exc)
        self._actor.reply.remote(call_id, error, value)

    def drop(self) -> None:
        """The actor is gone: take its metrics off the registry."""
        for family, metric in self._metrics.values():
            family.remove(metric)
        self._metrics.clear()
        for family in self._families.values():
            self._families_shared.release(family)
        self._families.clear()

    # -- what the actor asks ----------------------------------------------------------------

    def _response(self, key: int, response: wire.ResponseWire | None, flags: int) -> None:
        self._respond(key, wire.response_from_wire(response), flags)

    def _infer(self, bls_id: int, request_wire: tuple) -> None:
        request = wire.bls_request_from_wire(request_wire)
        deliver_remote = self._actor.deliver.remote

        def deliver(response: InferenceResponse | None, flags: int) -> None:
            deliver_remote(bls_id, wire.response_to_wire(response), flags)

        self._server.infer_async(request, deliver)

    def _is_cancelled(self, key: int) -> bool:
        request = self._lookup(key)
        return bool(request is not None and request.cancelled)

    def _metric_family(self, name: str, description: str, kind: str) -> int:
        family = self._families_shared.acquire(name, description, MetricKind(kind))
        family_id = self._next_family
        self._next_family += 1
        self._families[family_id] = family
        return family_id

    def _metric_family_remove(self, family_id: int) -> None:
        family = self._families.pop(family_id, None)
        if family is not None:
            self._families_shared.release(family)

    def _metric_new(self, metric_id: tuple[int, int], labels: dict[str, str],
                    buckets: list[float] | None) -> None:
        family = self._families.get(metric_id[0])
        if family is None:
            raise TritonError.invalid_arg("the metric family has been deleted")
        self._metrics[tuple(metric_id)] = (family, family.metric(labels, buckets))  # type: ignore[index]

    def _metric_update(self, metric_id: tuple[int, int], op: str, value: float) -> None:
        entry = self._metrics.get(tuple(metric_id))  # type: ignore[arg-type]
        if entry is not None:
            getattr(entry[1], op)(value)

    def _metric_remove(self, metric_id: tuple[int, int]) -> None:
        entry = self._metrics.pop(tuple(metric_id), None)  # type: ignore[arg-type]
        if entry is not None:
            entry[0].remove(entry[1])

    @staticmethod
    def _log(name: str, level: int, message: str) -> None:
        logging.getLogger(name).log(level, "%s", message)

