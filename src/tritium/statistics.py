"""Per model-version statistics: Triton's ModelStatistics fields, read by stats and metrics.

Counts and durations are recorded when a request's final response is sent (success or failure)
and when an instance finishes an execution (batch stats), under one lock per model version.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from .errors import Code, TritonError
from .request import InferenceRequest

# Triton 2.51's `reason` label of nv_inference_request_failure, in the order it lists them.
FAILURE_REASONS = ("OTHER", "BACKEND", "CANCELED", "REJECTED")


def failure_reason(request: InferenceRequest, error: TritonError | None) -> str:
    """Why a request failed, as Triton's FailureReason: cancelled; refused by the scheduler
    before it ran (queue full, timeout: REJECTED); failed once it reached the backend; other."""
    if request.cancelled or (error is not None and error.code is Code.CANCELLED):
        return "CANCELED"
    if request.exec_start_ns:
        return "BACKEND"
    if error is not None and error.code is Code.UNAVAILABLE:
        return "REJECTED"
    return "OTHER"


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
    cache_hit: Duration = field(default_factory=Duration)
    cache_miss: Duration = field(default_factory=Duration)
    # The model uses the response cache (Triton reports nv_cache_*_per_model only then).
    cache_enabled: bool = False
    # Failed requests by FAILURE_REASONS entry.
    fail_reasons: dict[str, int] = field(default_factory=dict)


class ModelStatistics:
    """Counters kept as plain integers (two per duration: count, ns) under one lock: this runs
    for every request and every execution."""

    def __init__(self, name: str, version: str) -> None:
        self.name = name
        self.version = version
        self._lock = threading.Lock()
        self._last_inference_ms = 0
        self._inference_count = 0
        self._execution_count = 0
        self._success_count = self._success_ns = 0
        self._fail_count = self._fail_ns = 0
        self._fail_reasons = dict.fromkeys(FAILURE_REASONS, 0)
        # Queue and compute durations count the successful requests (Triton's rule).
        self._queue_ns = 0
        self._compute_input_ns = 0
        self._compute_infer_ns = 0
        self._compute_output_ns = 0
        # batch size -> [executions, compute input ns, compute infer ns, compute output ns]
        self._batch_stats: dict[int, list[int]] = {}
        # Requests answered from the response cache count as successes with a queue time,
        # but not as inferences or compute (Triton's UpdateSuccessCacheHit).
        self._cache_hit_count = self._cache_hit_ns = 0
        self._cache_miss_count = self._cache_miss_ns = 0
        self.cache_enabled = False

    def record_request(self, request: InferenceRequest, success: bool,
                       reason: str = "OTHER") -> None:
        """Called once per request, when its final response is sent (`reason`: why it
        failed, one of FAILURE_REASONS)."""
        end = time.perf_counter_ns()
        now_ms = int(time.time() * 1000)
        queued = request.queue_start_ns
        exec_start = request.exec_start_ns
        if success and request.cache_hit_ns:
            self._record_cache_hit(request, end, now_ms)
            return
        if not success or not exec_start:
            total = end - queued
            with self._lock:
                self._last_inference_ms = now_ms
                self._fail_count += 1
                self._fail_ns += total if total > 0 else 0
                self._fail_reasons[reason] += 1
            return
        exec_end = request.exec_end_ns or end
        input_end = request.compute_input_end_ns or exec_start
        output_start = request.compute_output_start_ns or exec_end
        total = end - queued
        queue = exec_start - queued
        compute_input = input_end - exec_start
        compute_infer = output_start - input_end
        compute_output = exec_end - output_start
        batch = request.batch_size
        with self._lock:
            self._last_inference_ms = now_ms
            self._success_count += 1
            self._success_ns += total if total > 0 else 0
            self._queue_ns += queue if queue > 0 else 0
            self._compute_input_ns += compute_input if compute_input > 0 else 0
            self._compute_infer_ns += compute_infer if compute_infer > 0 else 0
            self._compute_output_ns += compute_output if compute_output > 0 else 0
            self._inference_count += batch if batch > 1 else 1

    def _record_cache_hit(self, request: InferenceRequest, end: int, now_ms: int) -> None:
        total = end - request.queue_start_ns
        queue = request.cache_hit_start_ns - request.queue_start_ns
        with self._lock:
            self._last_inference_ms = now_ms
            self._success_count += 1
            self._success_ns += total if total > 0 else 0
            self._queue_ns += queue if queue > 0 else 0
            self._cache_hit_count += 1
            self._cache_hit_ns += request.cache_hit_ns

    def record_cache_miss(self, ns: int) -> None:
        """A request computed because the cache had no answer: lookup plus insertion time."""
        with self._lock:
            self._cache_miss_count += 1
            self._cache_miss_ns += ns

    def record_execution(self, requests: Sequence[InferenceRequest]) -> None:
        """Called once per backend execute, after it returned (batch_stats, execution_count)."""
        if not requests:
            return
        first = requests[0]
        exec_start = first.exec_start_ns
        exec_end = first.exec_end_ns
        input_end = first.compute_input_end_ns or exec_start
        output_start = first.compute_output_start_ns or exec_end
        if len(requests) == 1:
            batch = first.batch_size if first.batch_size > 1 else 1
        else:
            batch = sum(max(r.batch_size, 1) for r in requests)
        compute_input = input_end - exec_start
        compute_infer = output_start - input_end
        compute_output = exec_end - output_start
        with self._lock:
            self._execution_count += 1
            stats = self._batch_stats.get(batch)
            if stats is None:
                stats = self._batch_stats[batch] = [0, 0, 0, 0]
            stats[0] += 1
            stats[1] += compute_input if compute_input > 0 else 0
            stats[2] += compute_infer if compute_infer > 0 else 0
            stats[3] += compute_output if compute_output > 0 else 0

    def snapshot(self) -> StatisticsSnapshot:
        with self._lock:
            success = self._success_count
            computed = success - self._cache_hit_count
            return StatisticsSnapshot(
                name=self.name,
                version=self.version,
                last_inference_ms=self._last_inference_ms,
                inference_count=self._inference_count,
                execution_count=self._execution_count,
                success=Duration(success, self._success_ns),
                fail=Duration(self._fail_count, self._fail_ns),
                queue=Duration(success, self._queue_ns),
                compute_input=Duration(computed, self._compute_input_ns),
                compute_infer=Duration(computed, self._compute_infer_ns),
                compute_output=Duration(computed, self._compute_output_ns),
                batch_stats={
                    size: BatchStats(Duration(b[0], b[1]), Duration(b[0], b[2]),
                                     Duration(b[0], b[3]))
                    for size, b in self._batch_stats.items()
                },
                cache_hit=Duration(self._cache_hit_count, self._cache_hit_ns),
                cache_miss=Duration(self._cache_miss_count, self._cache_miss_ns),
                cache_enabled=self.cache_enabled,
                fail_reasons=dict(self._fail_reasons),
            )
