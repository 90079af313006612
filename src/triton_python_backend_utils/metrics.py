"""Custom metrics (``MetricFamily`` and the ``Metric`` objects it makes), kept in the server's
metrics registry through the runtime, with Triton's lifetime rules and error messages."""

from __future__ import annotations

import sys
from enum import IntEnum

from .errors import TritonModelException
from .runtime import _require_runtime, _Runtime, _with_prefix


class _MetricKind(IntEnum):
    COUNTER = 0
    GAUGE = 1
    HISTOGRAM = 2


class Metric:
    """One labelled metric of a MetricFamily (made by ``MetricFamily.Metric``)."""

    def __init__(self, handle: object) -> None:
        self._handle = handle
        self._cleared = False

    def _live_runtime(self) -> _Runtime:
        if self._cleared:
            raise TritonModelException(
                "Invalid metric operation as the corresponding 'MetricFamily' has been "
                "deleted. The 'MetricFamily' object should be deleted AFTER its "
                "corresponding 'Metric' objects have been deleted."
            )
        return _require_runtime()

    def _update(self, prefix: str, op: str, value: float) -> None:
        value = float(value)
        _with_prefix(prefix, lambda: self._live_runtime().metric_update(self._handle, op, value))

    def increment(self, value: float) -> None:
        self._update("Failed to increment metric value: ", "increment", value)

    def set(self, value: float) -> None:
        self._update("Failed to set metric value: ", "set", value)

    def observe(self, value: float) -> None:
        self._update("Failed to observe metric value: ", "observe", value)

    def value(self) -> float:
        return _with_prefix(
            "Failed to get metric value: ",
            lambda: self._live_runtime().metric_value(self._handle),
        )

    def _clear(self) -> None:
        if not self._cleared:
            self._cleared = True
            _require_runtime().metric_delete(self._handle)


class MetricFamily:
    """A custom metric family; deleting it deletes its metrics (Triton's lifetime rules)."""

    COUNTER = _MetricKind.COUNTER
    GAUGE = _MetricKind.GAUGE
    HISTOGRAM = _MetricKind.HISTOGRAM

    def __init__(self, name: str, description: str, kind: _MetricKind) -> None:
        if (
            not isinstance(name, str)
            or not isinstance(description, str)
            or not isinstance(kind, _MetricKind)
        ):
            raise TypeError(
                "MetricFamily(): expected (name: str, description: str, kind: "
                "MetricFamily.COUNTER | MetricFamily.GAUGE | MetricFamily.HISTOGRAM)"
            )
        self._handle = _with_prefix(
            "Error when creating MetricFamily: ",
            lambda: _require_runtime().metric_family_new(name, description, int(kind)),
        )
        self._kind = kind
        self._metrics: list[Metric] = []

    def Metric(
        self, labels: dict[str, str] | None = None, buckets: list[float] | None = None
    ) -> Metric:
        """A metric of this family with the given labels (and buckets for a histogram)."""
        if labels is not None and not isinstance(labels, dict):
            raise TritonModelException("Failed to create metric. Labels must be a dictionary.")
        if buckets is not None:
            if not isinstance(buckets, list):
                raise TritonModelException("Failed to create metric. Buckets must be a list.")
            if self._kind != _MetricKind.HISTOGRAM:
                raise TritonModelException("Failed to create metric. Unexpected buckets found.")
            buckets = [float(b) for b in buckets]
        elif self._kind == _MetricKind.HISTOGRAM:
            raise TritonModelException("Failed to create metric. Missing required buckets.")
        handle = _with_prefix(
            "Error when creating Metric: ",
            lambda: _require_runtime().metric_new(self._handle, labels or {}, buckets),
        )
        metric = Metric(handle)
        self._metrics.append(metric)
        return metric

    def __del__(self) -> None:
        if not hasattr(self, "_metrics"):
            return  # __init__ failed: nothing was created.
        for metric in self._metrics:
            try:
                metric._clear()
            except Exception as e:
                print(f"Error when deleting Metric: {e}", file=sys.stderr)
        try:
            _require_runtime().metric_family_delete(self._handle)
        except Exception as e:
            print(f"Error when deleting MetricFamily: {e}", file=sys.stderr)
