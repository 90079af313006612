"""Custom metrics a Python model makes with `pb_utils.MetricFamily` (Triton's metric families
of the python backend): created in the server's registry on the stub's behalf, and removed when
the stub deletes them or dies.

A family is shared by name across every model of the backend, as in Triton: the server's
registry holds one family per name, removed once no stub uses it.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from tritium.backend import MetricKind, TritonError

_METRIC_KINDS = {0: MetricKind.COUNTER, 1: MetricKind.GAUGE, 2: MetricKind.HISTOGRAM}


class FamilyRegistry:
    """The backend's custom metric families by name, each with how many stub handles use it."""

    def __init__(self) -> None:
        self._entries: dict[str, list[Any]] = {}  # name -> [family, users]
        self._lock = threading.Lock()

    def acquire(self, server: Any, name: str, description: str, kind: MetricKind) -> None:
        """One more user of family `name`, created in the server's registry if new."""
        with self._lock:
            entry = self._entries.get(name)
            if entry is None:
                family = server.metrics.family(name, description, kind)
                self._entries[name] = [family, 1]
            else:
                if entry[0].kind is not kind:
                    raise TritonError.invalid_arg(
                        f"metric family '{name}' already exists with a different kind"
                    )
                entry[1] += 1

    def get(self, name: str) -> Any:
        """The family called `name`, or None once deleted."""
        entry = self._entries.get(name)
        return entry[0] if entry is not None else None

    def release(self, server: Any, name: str) -> None:
        """One user fewer; the last one removes the family from the server's registry."""
        with self._lock:
            entry = self._entries.get(name)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] <= 0:
                del self._entries[name]
                server.metrics.remove(entry[0])


class StubMetrics:
    """The families and metrics one stub made, by the handles the stub knows them by."""

    def __init__(self, registry: FamilyRegistry, server: Any) -> None:
        self._registry = registry
        self._server = server
        self._families: dict[int, str] = {}  # handle -> family name
        self._metrics: dict[int, tuple[Any, Any]] = {}  # handle -> (family, metric)
        self._ids = itertools.count(1)

    def family_new(self, name: str, description: str, kind: int) -> int:
        metric_kind = _METRIC_KINDS.get(kind)
        if metric_kind is None:
            raise TritonError.invalid_arg(f"unknown metric kind {kind}")
        self._registry.acquire(self._server, name, description, metric_kind)
        handle = next(self._ids)
        self._families[handle] = name
        return handle

    def metric_new(self, family_handle: int, labels: dict, buckets: Any) -> int:
        name = self._families.get(family_handle)
        family = self._registry.get(name) if name is not None else None
        if family is None:
            raise TritonError.invalid_arg("the metric family has been deleted")
        metric = family.metric({str(k): str(v) for k, v in labels.items()}, buckets)
        handle = next(self._ids)
        self._metrics[handle] = (family, metric)
        return handle

    def _metric(self, handle: int) -> Any:
        entry = self._metrics.get(handle)
        if entry is None:
            raise TritonError.invalid_arg("the metric has been deleted")
        return entry[1]

    def metric_update(self, handle: int, op: str, value: float) -> None:
        metric = self._metric(handle)
        if op == "increment":
            metric.increment(value)
        elif op == "set":
            metric.set(value)
        elif op == "observe":
            metric.observe(value)
        else:
            raise TritonError.invalid_arg(f"unknown metric operation '{op}'")

    def metric_value(self, handle: int) -> float:
        return float(self._metric(handle).value)

    def metric_delete(self, handle: int) -> None:
        entry = self._metrics.pop(handle, None)
        if entry is not None:
            entry[0].remove(entry[1])

    def family_delete(self, handle: int) -> None:
        name = self._families.pop(handle, None)
        if name is not None:
            self._registry.release(self._server, name)

    def drop(self) -> None:
        """Delete everything the stub made (it has died)."""
        for handle in list(self._metrics):
            self.metric_delete(handle)
        for handle in list(self._families):
            self.family_delete(handle)
