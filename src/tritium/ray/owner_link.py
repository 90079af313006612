"""The actor's way back to the Tritium server that owns it (actor side).

An actor cannot call its driver, so everything an instance asks of its server travels on one
stream the owner reads (`InstanceActor.events`, a Ray streaming generator): calls that wait for
an answer (BLS submission, model readiness, load/unload, a cancellation check, a new metric
family) and posts that do not (metric updates, log records). The owner answers calls with
`InstanceActor.reply` and streams BLS responses back with `InstanceActor.deliver`.

`OwnerServer` is the `ServerApi` the backend in the actor sees as `model.server`: BLS, custom
metrics and model control go to the owning server exactly as a local backend's do.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
from collections.abc import Sequence
from typing import Any

from ..custom_metrics import Metric, MetricFamily, MetricKind
from ..request import RESPONSE_COMPLETE_FINAL, Deliver, InferenceRequest
from . import wire

# What the owner may be asked to do: see owner_calls.OwnerCalls.
Event = tuple


class OwnerLink:
    """The event queue the owner drains, and the calls waiting for its replies."""

    def __init__(self) -> None:
        self.events: queue.SimpleQueue[Event | None] = queue.SimpleQueue()
        self._ids = itertools.count(1)
        self._waiting: dict[int, list[Any]] = {}  # call id -> [event, error, value]

    def post(self, name: str, *args: Any) -> None:
        self.events.put(("post", 0, name, args))

    def call(self, name: str, *args: Any) -> Any:
        call_id = next(self._ids)
        slot: list[Any] = [threading.Event(), None, None]
        self._waiting[call_id] = slot
        self.events.put(("call", call_id, name, args))
        slot[0].wait()
        if slot[1] is not None:
            raise wire.error_from_wire(slot[1])
        return slot[2]

    def reply(self, call_id: int, error: wire.ErrorWire | None, value: Any) -> None:
        slot = self._waiting.pop(call_id, None)
        if slot is not None:
            slot[1], slot[2] = error, value
            slot[0].set()

    def close(self) -> None:
        """No more events: the owner's stream ends."""
        self.events.put(None)

    def drain(self, first: Event) -> list[Event] | None:
        """`first` and whatever else is queued, for one streamed item (None: closed)."""
        batch = [first]
        while True:
            try:
                item = self.events.get_nowait()
            except queue.Empty:
                return batch
            if item is None:
                self.events.put(None)  # seen by the next drain, after this batch
                return batch
            batch.append(item)


class OwnerServer:
    """`model.server` inside the actor: the owning Tritium server, reached through the link."""

    def __init__(self, link: OwnerLink) -> None:
        self._link = link
        self.metrics = RemoteMetricRegistry(link)
        self._bls: dict[int, Deliver] = {}
        self._bls_ids = itertools.count(1)

    def infer_async(self, request: InferenceRequest, deliver: Deliver) -> None:
        bls_id = next(self._bls_ids)
        self._bls[bls_id] = deliver
        try:
            self._link.call("infer", bls_id, wire.bls_request_to_wire(request))
        except BaseException:
            self._bls.pop(bls_id, None)
            raise

    def deliver(self, bls_id: int, response: wire.ResponseWire | None, flags: int) -> None:
        """A response to a BLS request, from the owner."""
        deliver = (self._bls.pop(bls_id, None) if flags & RESPONSE_COMPLETE_FINAL
                   else self._bls.get(bls_id))
        if deliver is not None:
            deliver(wire.response_from_wire(response), flags)

    def model_ready(self, name: str, version: int = -1) -> bool:
        return bool(self._link.call("model_ready", name, version))

    def load_model(self, name: str, parameters: dict[str, Any] | None = None) -> None:
        self._link.call("load_model", name, dict(parameters or {}))

    def unload_model(self, name: str, unload_dependents: bool = False) -> None:
        self._link.call("unload_model", name, unload_dependents)


class RemoteMetricRegistry:
    """The owner's custom-metric registry, as the backend in the actor uses it.

    A family is created by a call (the owner refuses a name taken by another kind); each
    metric keeps its value here too, so reading it needs no round trip, and its updates are
    posted in order.
    """

    def __init__(self, link: OwnerLink) -> None:
        self._link = link

    def family(self, name: str, description: str, kind: MetricKind) -> RemoteFamily:
        family_id = self._link.call("metric_family", name, description, kind.value)
        return RemoteFamily(self, self._link, family_id, name, description, kind)

    def remove(self, family: RemoteFamily) -> None:
        self._link.post("metric_family_remove", family.id)


class RemoteFamily(MetricFamily):
    def __init__(self, registry: RemoteMetricRegistry, link: OwnerLink, family_id: int,
                 name: str, description: str, kind: MetricKind) -> None:
        super().__init__(registry, name, description, kind)  # type: ignore[arg-type]
        self._link = link
        self.id = family_id
        self._metric_ids = itertools.count(1)

    def metric(self, labels: dict[str, str],  # type: ignore[override]
               buckets: Sequence[float] | None = None) -> RemoteMetric:
        local = super().metric(labels, buckets)
        metric = RemoteMetric(local, self._link, (self.id, next(self._metric_ids)))
        self._link.post("metric_new", metric.id, dict(labels),
                        None if buckets is None else list(buckets))
        return metric

    def remove(self, metric: RemoteMetric) -> None:  # type: ignore[override]
        super().remove(metric.local)
        self._link.post("metric_remove", metric.id)


class RemoteMetric:
    """A metric whose value lives here and in the owner's registry."""

    def __init__(self, local: Metric, link: OwnerLink, metric_id: tuple[int, int]) -> None:
        self.local = local
        self._link = link
        self.id = metric_id

    @property
    def value(self) -> float:
        return self.local.value

    def increment(self, value: float) -> None:
        self.local.increment(value)
        self._link.post("metric_update", self.id, "increment", value)

    def set(self, value: float) -> None:
        self.local.set(value)
        self._link.post("metric_update", self.id, "set", value)

    def observe(self, value: float) -> None:
        self.local.observe(value)
        self._link.post("metric_update", self.id, "observe", value)


class RemoteRequest(InferenceRequest):
    """A request in the actor; whether the client cancelled it is asked of the owner."""

    __slots__ = ("_link", "_key")

    def bind(self, link: OwnerLink, key: int) -> None:
        self._link = link
        self._key = key

    @property
    def cancelled(self) -> bool:
        link = getattr(self, "_link", None)
        return bool(link is not None and link.call("is_cancelled", self._key))

    @cancelled.setter
    def cancelled(self, value: bool) -> None:
        pass  # only the owner's request is ever cancelled


class LogForwarder(logging.Handler):
    """Sends the actor's `tritium.*` log records to the owner, which logs them as its own."""

    def __init__(self, link: OwnerLink, instance: str) -> None:
        super().__init__()
        self._link = link
        self._prefix = f"[{instance} on Ray] "

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._link.post("log", record.name, record.levelno, self._prefix + record.getMessage())
        except Exception:
            self.handleError(record)

