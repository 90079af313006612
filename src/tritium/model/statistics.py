"""Per model-version statistics: Triton's ModelStatistics fields, read by stats and metrics.

Counts and durations are recorded when a request's final response is sent (success or failure)
and when an instance finishes an execution (batch stats), under one lock per model version.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ..request import InferenceRequest


@dataclass
class Duration:
    count: int = 0
    ns: int = 0

    def add(self, ns: int, count: int = 1) -> None:
        self.count += count
        self.ns += max(ns, 0)


@dataclass
class BatchStats:
    compute_input: Duration = field(default_factory=Duration)
    compute_infer: Duration = field(default_factory=Duration)
    compute_output: Duration = field(default_factory=Duration)


@dataclass
class StatisticsSnapshot:
    """A consistent copy of one model version's statistics."""

    name: str
    version: str
    last_inference_ms: int
    inference_count: int
    execution_count: int
    success: Duration
    fail: Duration
    queue: Duration
    compute_input: Duration
    compute_infer: Duration
    compute_output: Duration
    batch_stats: dict[int, BatchStats]


class ModelStatistics:
    def __init__(self, name: str, version: str) -> None:
        self.name = name
        self.version = version
        self._lock = threading.Lock()
        self._last_inference_ms = 0
        self._inference_count = 0
        self._execution_count = 0
        self._success = Duration()
        self._fail = Duration()
        self._queue = Duration()
        self._compute_input = Duration()
        self._compute_infer = Duration()
        self._compute_output = Duration()
        self._batch_stats: dict[int, BatchStats] = {}

    def record_request(self, request: InferenceRequest, success: bool) -> None:
        """Called once per request, when its final response is sent."""
        end = time.perf_counter_ns()
        with self._lock:
            self._last_inference_ms = int(time.time() * 1000)
            if not success or not request.exec_start_ns:
                self._fail.add(end - request.queue_start_ns)
                return
            exec_end = request.exec_end_ns or end
            input_end = request.compute_input_end_ns or request.exec_start_ns
            output_start = request.compute_output_start_ns or exec_end
            self._success.add(end - request.queue_start_ns)
            self._queue.add(request.exec_start_ns - request.queue_start_ns)
            self._compute_input.add(input_end - request.exec_start_ns)
            self._compute_infer.add(output_start - input_end)
            self._compute_output.add(exec_end - output_start)
            self._inference_count += max(request.batch_size, 1)

    def record_execution(self, requests: list[InferenceRequest]) -> None:
        """Called once per backend execute, after it returned (batch_stats, execution_count)."""
        if not requests:
            return
        first = requests[0]
        input_end = first.compute_input_end_ns or first.exec_start_ns
        output_start = first.compute_output_start_ns or first.exec_end_ns
        batch = sum(max(r.batch_size, 1) for r in requests)
        with self._lock:
            self._execution_count += 1
            stats = self._batch_stats.setdefault(batch, BatchStats())
            stats.compute_input.add(input_end - first.exec_start_ns)
            stats.compute_infer.add(output_start - input_end)
            stats.compute_output.add(first.exec_end_ns - output_start)

    def snapshot(self) -> StatisticsSnapshot:
        def copy(d: Duration) -> Duration:
            return Duration(d.count, d.ns)

        with self._lock:
            return StatisticsSnapshot(
                name=self.name,
                version=self.version,
                last_inference_ms=self._last_inference_ms,
                inference_count=self._inference_count,
                execution_count=self._execution_count,
                success=copy(self._success),
                fail=copy(self._fail),
                queue=copy(self._queue),
                compute_input=copy(self._compute_input),
                compute_infer=copy(self._compute_infer),
                compute_output=copy(self._compute_output),
                batch_stats={
                    size: BatchStats(copy(b.compute_input), copy(b.compute_infer), copy(b.compute_output))
                    for size, b in self._batch_stats.items()
                },
            )
