"""Custom metrics that backends create (TRITONSERVER_MetricFamily / TRITONSERVER_Metric).

Python-backend models make them with `pb_utils.MetricFamily`; any backend can through
`model.server.metrics`. The metrics endpoint exports every family next to Triton's own.
"""

from __future__ import annotations

import bisect
import enum
import threading
from collections.abc import Sequence

from .errors import TritonError


class MetricKind(enum.Enum):
    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"


class Metric:
    """One labelled series of a family."""

    def __init__(self, family: MetricFamily, labels: dict[str, str],
                 buckets: Sequence[float] | None) -> None:
        self.family = family
        self.labels = dict(labels)
        self._lock = threading.Lock()
        self._value = 0.0
        self.buckets = list(buckets) if buckets is not None else None
        self.references = 1  # the metric() calls that returned it, less its remove() calls
        self.bucket_counts = [0] * (len(self.buckets) + 1) if self.buckets is not None else []
        self.count = 0

    @property
    def value(self) -> float:
        if self.family.kind is MetricKind.HISTOGRAM:
            raise TritonError.unsupported("value() is not supported for histogram metrics")
        return self._value

    @property
    def sum(self) -> float:
        return self._value

    def increment(self, value: float) -> None:
        if self.family.kind is MetricKind.HISTOGRAM:
            raise TritonError.unsupported("increment() is not supported for histogram metrics")
        if self.family.kind is MetricKind.COUNTER and value < 0:
            raise TritonError.invalid_arg("TRITONSERVER_MetricIncrement: value must be >= 0")
        with self._lock:
            self._value += value

    def set(self, value: float) -> None:
        if self.family.kind is not MetricKind.GAUGE:
            raise TritonError.unsupported("set() is only supported for gauge metrics")
        with self._lock:
            self._value = value

    def observe(self, value: float) -> None:
        if self.family.kind is not MetricKind.HISTOGRAM or self.buckets is None:
            raise TritonError.unsupported("observe() is only supported for histogram metrics")
        with self._lock:
            self.bucket_counts[bisect.bisect_left(self.buckets, value)] += 1
            self.count += 1
            self._value += value


class MetricFamily:
    def __init__(self, registry: MetricRegistry, name: str, description: str,
                 kind: MetricKind) -> None:
        self._registry = registry
        self.name = name
        self.description = description
        self.kind = kind
        self._lock = threading.Lock()
        # By labels: as in Triton (prometheus-cpp's Family::Add), a metric made twice with the
        # same labels is one series, shared, kept until the last maker removes it.
        self._metrics: dict[tuple[tuple[str, str], ...], Metric] = {}

    def metric(self, labels: dict[str, str], buckets: Sequence[float] | None = None) -> Metric:
        if self.kind is MetricKind.HISTOGRAM:
            if buckets is None:
                raise TritonError.invalid_arg("histogram metrics need buckets")
            if any(a >= b for a, b in zip(buckets, buckets[1:], strict=False)):
                raise TritonError.invalid_arg(
                    f"histogram buckets must be strictly increasing, got {list(buckets)}")
        key = tuple(sorted(labels.items()))
        with self._lock:
            metric = self._metrics.get(key)
            if metric is not None:
                metric.references += 1
                return metric
            metric = self._metrics[key] = Metric(self, labels, buckets)
            return metric

    def remove(self, metric: Metric) -> None:
        with self._lock:
            key = tuple(sorted(metric.labels.items()))
            if self._metrics.get(key) is metric:
                metric.references -= 1
                if metric.references <= 0:
                    del self._metrics[key]

    def metrics(self) -> list[Metric]:
        with self._lock:
            return list(self._metrics.values())


class MetricRegistry:
    """Every custom family of one server, by name."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._families: dict[str, MetricFamily] = {}

    def family(self, name: str, description: str, kind: MetricKind) -> MetricFamily:
        """Create the family, or return the existing one of the same name and kind."""
        with self._lock:
            existing = self._families.get(name)
            if existing is not None:
                if existing.kind is not kind:
                    raise TritonError.invalid_arg(
                        f"metric family '{name}' already exists with a different kind"
                    )
                return existing
            family = MetricFamily(self, name, description, kind)
            self._families[name] = family
            return family

    def remove(self, family: MetricFamily) -> None:
        with self._lock:
            if self._families.get(family.name) is family:
                del self._families[family.name]

    def families(self) -> list[MetricFamily]:
        with self._lock:
            return list(self._families.values())
