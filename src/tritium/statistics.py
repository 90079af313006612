"""Per model-version statistics: Triton's ModelStatistics fields, read by stats and metrics.

Who counts follows Triton. For the server's own backends (built-ins, Python models) the server
counts: each request when its final response is sent (success or failure), each execution when
the instance finishes it (batch stats). A compiled backend counts for itself, as Triton's core
counts a TRITONBACKEND library only from its reports: a request once the backend reports it
(`record_reported`), an execution once it reports the batch (`record_batch`); the server still
counts the requests that fail before they reach the backend. Response statistics (per response
index of a request, `record_response`) come from the backends that report them.
Everything is kept under one lock per model version. What a GPU instance's requests and
executions add is also kept per GPU: Triton's per-instance inference metrics carry the
instance's `gpu_uuid` (the statistics extension shows only the model's totals).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .errors import Code, TritonError
from .latency_summary import LatencySummaries
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
class ResponseStats:
    """Triton's InferResponseStatistics: one response index's counts and durations."""

    compute_infer: Duration = field(default_factory=Duration)
    compute_output: Duration = field(default_factory=Duration)
    success: Duration = field(default_factory=Duration)
    fail: Duration = field(default_factory=Duration)
    empty_response: Duration = field(default_factory=Duration)
    cancel: Duration = field(default_factory=Duration)


@dataclass
class InferenceCounts:
    """The figures of Triton's per-instance inference metrics (success, failure by reason,
    inference and execution counts, request, queue and compute durations): one GPU's share of
    a model version's, or what is left of them once every GPU's share is taken out."""

    success: Duration
    fail: Duration
    queue: Duration
    compute_input: Duration
    compute_infer: Duration
    compute_output: Duration
    inference_count: int
    execution_count: int
    # Failed requests by FAILURE_REASONS entry.
    fail_reasons: dict[str, int]


class _Counters:
    """A model version's inference counters, or one GPU's share of them: plain integers,
    changed under the model's lock."""

    __slots__ = ("success", "success_ns", "fail", "fail_ns", "queue_ns", "input_ns", "infer_ns",
                 "output_ns", "inferences", "executions", "fail_reasons")

    def __init__(self) -> None:
        self.success = self.success_ns = self.fail = self.fail_ns = 0
        # Queue and compute durations count the successful requests (Triton's rule).
        self.queue_ns = self.input_ns = self.infer_ns = self.output_ns = 0
        self.inferences = self.executions = 0
        self.fail_reasons = dict.fromkeys(FAILURE_REASONS, 0)

    def add_success(self, total: int, queue: int, compute_input: int, compute_infer: int,
                    compute_output: int, inferences: int) -> None:
        self.success += 1
        self.success_ns += total
        self.queue_ns += queue
        self.input_ns += compute_input
        self.infer_ns += compute_infer
        self.output_ns += compute_output
        self.inferences += inferences

    def add_failure(self, total: int, reason: str) -> None:
        self.fail += 1
        self.fail_ns += total
        self.fail_reasons[reason] += 1

    def counts(self) -> InferenceCounts:
        """As the metrics read them: the compute durations count every success (a GPU's
        share has no cache hits; the model's totals take theirs out, see `snapshot`)."""
        return InferenceCounts(
            success=Duration(self.success, self.success_ns),
            fail=Duration(self.fail, self.fail_ns),
            queue=Duration(self.success, self.queue_ns),
            compute_input=Duration(self.success, self.input_ns),
            compute_infer=Duration(self.success, self.infer_ns),
            compute_output=Duration(self.success, self.output_ns),
            inference_count=self.inferences,
            execution_count=self.executions,
            fail_reasons=dict(self.fail_reasons),
        )


def _minus(total: Duration, parts: list[Duration]) -> Duration:
    return Duration(total.count - sum(p.count for p in parts), total.ns - sum(p.ns for p in parts))


@dataclass(frozen=True)
class MemoryUsage:
    """Memory a backend reports its model or instance holds (TRITONSERVER_BufferAttributes):
    `memory_type` is TRITONSERVER_MemoryType's number (0 CPU, 1 CPU_PINNED, 2 GPU)."""

    memory_type: int
    memory_type_id: int
    byte_size: int


# What `record_response` was told about one response (Triton's four outcomes).
RESPONSE_SUCCESS, RESPONSE_FAIL, RESPONSE_EMPTY, RESPONSE_CANCEL = range(4)


@dataclass
class StatisticsSnapshot(InferenceCounts):
    """A consistent copy of one model version's statistics (its inference counts, and more)."""

    name: str
    version: str
    last_inference_ms: int
    batch_stats: dict[int, BatchStats]
    cache_hit: Duration = field(default_factory=Duration)
    cache_miss: Duration = field(default_factory=Duration)
    # The model uses the response cache (Triton reports nv_cache_*_per_model only then).
    cache_enabled: bool = False
    # Response index ("0", "1", ...) -> its statistics, in Triton's (string) order.
    response_stats: dict[str, ResponseStats] = field(default_factory=dict)
    # GPU device id -> what its instances' requests and executions count.
    gpus: dict[int, InferenceCounts] = field(default_factory=dict)
    # What the model and its instances reported holding, summed per memory type and device.
    memory_usage: list[MemoryUsage] = field(default_factory=list)
    # The model's latency summaries (--metrics-config summary_latencies=true), read live.
    summaries: LatencySummaries | None = None
    # The model's namespace with --model-namespacing (ModelStatistics.namespace), else "".
    namespace: str = ""

    def without_gpus(self, devices: Iterable[int]) -> InferenceCounts:
        """The counts without the share of GPUs `devices`: Triton's series without a
        `gpu_uuid` (CPU and model instances, requests that failed before any instance ran
        them, and GPUs whose UUID the metrics do not know)."""
        parts = [self.gpus[device] for device in devices if device in self.gpus]
        return InferenceCounts(
            success=_minus(self.success, [p.success for p in parts]),
            fail=_minus(self.fail, [p.fail for p in parts]),
            queue=_minus(self.queue, [p.queue for p in parts]),
            compute_input=_minus(self.compute_input, [p.compute_input for p in parts]),
            compute_infer=_minus(self.compute_infer, [p.compute_infer for p in parts]),
            compute_output=_minus(self.compute_output, [p.compute_output for p in parts]),
            inference_count=self.inference_count - sum(p.inference_count for p in parts),
            execution_count=self.execution_count - sum(p.execution_count for p in parts),
            fail_reasons={reason: count - sum(p.fail_reasons[reason] for p in parts)
                          for reason, count in self.fail_reasons.items()},
        )


class ModelStatistics:
    """Counters kept as plain integers (two per duration: count, ns) under one lock: this runs
    for every request and every execution."""

    def __init__(self, name: str, version: str) -> None:
        self.name = name
        self.version = version
        # The model's namespace (its repository's path with --model-namespacing, else ""):
        # its metrics carry it as the `namespace` label, as Triton's do.
        self.namespace = ""
        self._lock = threading.Lock()
        self._last_inference_ms = 0
        self._all = _Counters()
        # batch size -> [executions, compute input ns, compute infer ns, compute output ns]
        self._batch_stats: dict[int, list[int]] = {}
        # Requests answered from the response cache count as successes with a queue time,
        # but not as inferences or compute (Triton's UpdateSuccessCacheHit).
        self._cache_hit_count = self._cache_hit_ns = 0
        self._cache_miss_count = self._cache_miss_ns = 0
        self.cache_enabled = False
        # response index -> [count, ns] for compute infer, compute output, success, fail,
        # empty response, cancel (ResponseStats' order)
        self._response_stats: dict[str, list[int]] = {}
        # GPU device id -> its instances' share of `_all`.
        self._gpus: dict[int, _Counters] = {}
        # Reporter ("" for the model, else the instance's name) -> its last memory report.
        self._memory: dict[str, list[MemoryUsage]] = {}
        # Set by the life cycle when the server exports latency summaries.
        self.summaries: LatencySummaries | None = None

    def _gpu(self, device: int) -> _Counters:
        """The counters of GPU `device` (called under the lock)."""
        counters = self._gpus.get(device)
        if counters is None:
            counters = self._gpus[device] = _Counters()
        return counters

    def set_memory_usage(self, reporter: str, usage: list[MemoryUsage]) -> None:
        """A memory report of the model ("") or of one of its instances: it replaces that
        reporter's last one, as Triton's SetMemoryUsage does."""
        by_kind: dict[tuple[int, int], int] = {}
        for entry in usage:  # a later entry for the same memory replaces an earlier one
            by_kind[(entry.memory_type, entry.memory_type_id)] = entry.byte_size
        with self._lock:
            self._memory[reporter] = [MemoryUsage(kind, device, size)
                                      for (kind, device), size in by_kind.items()]

    def _memory_usage(self) -> list[MemoryUsage]:
        """Every reporter's memory summed per (memory type, device), in that order (called
        under the lock)."""
        totals: dict[tuple[int, int], int] = {}
        for usage in self._memory.values():
            for entry in usage:
                key = (entry.memory_type, entry.memory_type_id)
                totals[key] = totals.get(key, 0) + entry.byte_size
        return [MemoryUsage(kind, device, size) for (kind, device), size in sorted(totals.items())]

    def record_request(self, request: InferenceRequest, success: bool,
                       reason: str = "OTHER") -> None:
        """Called once per request, when its final response is sent (`reason`: why it
        failed, one of FAILURE_REASONS). A request its backend counts (a compiled backend's)
        counts here only what the backend reported before that response."""
        if not request.collects_statistics:
            return
        if request.statistics_by_backend:
            reported = request.reported_statistics
            if reported is not None:
                request.reported_statistics = None
                self.record_reported(request, True, *reported)
            return
        end = time.perf_counter_ns()
        now_ms = int(time.time() * 1000)
        exec_start = request.exec_start_ns
        if success and request.cache_hit_ns:
            self._record_cache_hit(request, end, now_ms)
            return
        if not success or not exec_start:
            self._record_failure(request, end, reason, now_ms)
            return
        exec_end = request.exec_end_ns or end
        self._record_success(request, exec_start, request.compute_input_end_ns or exec_start,
                             request.compute_output_start_ns or exec_end, exec_end, end, now_ms)

    def record_reported(self, request: InferenceRequest, success: bool, exec_start_ns: int,
                        compute_start_ns: int, compute_end_ns: int, exec_end_ns: int) -> None:
        """TRITONBACKEND_ModelInstanceReportStatistics: the backend's account of one request
        (a failure counts with reason BACKEND). Like Triton, the report moves no
        last_inference: the batch report does. A null request's report is left out."""
        if not request.collects_statistics:
            return
        end = time.perf_counter_ns()
        if success:
            self._record_success(request, exec_start_ns, compute_start_ns, compute_end_ns,
                                 exec_end_ns, end, 0)
        else:
            self._record_failure(request, end, "BACKEND", 0)

    def _record_failure(self, request: InferenceRequest, end: int, reason: str,
                        now_ms: int) -> None:
        total = end - request.queue_start_ns
        total = total if total > 0 else 0
        with self._lock:
            if now_ms:
                self._last_inference_ms = now_ms
            self._all.add_failure(total, reason)
            if request.gpu >= 0:
                self._gpu(request.gpu).add_failure(total, reason)

    def _record_success(self, request: InferenceRequest, exec_start: int, input_end: int,
                        output_start: int, exec_end: int, end: int, now_ms: int) -> None:
        queued = request.queue_start_ns
        total = end - queued
        queue = exec_start - queued
        compute_input = input_end - exec_start
        compute_infer = output_start - input_end
        compute_output = exec_end - output_start
        batch = request.batch_size
        inferences = batch if batch > 1 else 1
        total = total if total > 0 else 0
        queue = queue if queue > 0 else 0
        compute_input = compute_input if compute_input > 0 else 0
        compute_infer = compute_infer if compute_infer > 0 else 0
        compute_output = compute_output if compute_output > 0 else 0
        with self._lock:
            if now_ms:
                self._last_inference_ms = now_ms
            self._all.add_success(total, queue, compute_input, compute_infer, compute_output,
                                  inferences)
            if request.gpu >= 0:
                self._gpu(request.gpu).add_success(total, queue, compute_input, compute_infer,
                                                   compute_output, inferences)
        if self.summaries is not None:
            self.summaries.observe(request=total, queue=queue, compute_input=compute_input,
                                   compute_infer=compute_infer, compute_output=compute_output)

    def _record_cache_hit(self, request: InferenceRequest, end: int, now_ms: int) -> None:
        total = end - request.queue_start_ns
        queue = request.cache_hit_start_ns - request.queue_start_ns
        with self._lock:
            self._last_inference_ms = now_ms
            self._all.success += 1
            self._all.success_ns += total if total > 0 else 0
            self._all.queue_ns += queue if queue > 0 else 0
            self._cache_hit_count += 1
            self._cache_hit_ns += request.cache_hit_ns
        if self.summaries is not None:
            self.summaries.observe(request=max(total, 0), queue=max(queue, 0),
                                   cache_hit=request.cache_hit_ns)

    def record_cache_miss(self, ns: int) -> None:
        """A request computed because the cache had no answer: lookup plus insertion time."""
        with self._lock:
            self._cache_miss_count += 1
            self._cache_miss_ns += ns
        if self.summaries is not None:
            self.summaries.observe(cache_miss=ns)

    def record_execution(self, requests: Sequence[InferenceRequest]) -> None:
        """Called once per backend execute, after it returned (batch_stats, execution_count)."""
        if not requests:
            return
        first = requests[0]
        exec_start = first.exec_start_ns
        exec_end = first.exec_end_ns
        if len(requests) == 1:
            batch = first.batch_size if first.batch_size > 1 else 1
        else:
            batch = sum(max(r.batch_size, 1) for r in requests)
        self._add_batch(batch, exec_start, first.compute_input_end_ns or exec_start,
                        first.compute_output_start_ns or exec_end, exec_end, 0, first.gpu)

    def record_batch(self, batch_size: int, exec_start_ns: int, compute_start_ns: int,
                     compute_end_ns: int, exec_end_ns: int, gpu: int = -1) -> None:
        """TRITONBACKEND_ModelInstanceReportBatchStatistics: one execution, as the backend
        timed it (the time of the last inference is now, as Triton's), on GPU `gpu` (-1:
        none)."""
        self._add_batch(batch_size, exec_start_ns, compute_start_ns, compute_end_ns,
                        exec_end_ns, int(time.time() * 1000), gpu)

    def _add_batch(self, batch: int, exec_start: int, input_end: int, output_start: int,
                   exec_end: int, now_ms: int, gpu: int) -> None:
        compute_input = input_end - exec_start
        compute_infer = output_start - input_end
        compute_output = exec_end - output_start
        with self._lock:
            if now_ms > self._last_inference_ms:
                self._last_inference_ms = now_ms
            self._all.executions += 1
            if gpu >= 0:
                self._gpu(gpu).executions += 1
            stats = self._batch_stats.get(batch)
            if stats is None:
                stats = self._batch_stats[batch] = [0, 0, 0, 0]
            stats[0] += 1
            stats[1] += compute_input if compute_input > 0 else 0
            stats[2] += compute_infer if compute_infer > 0 else 0
            stats[3] += compute_output if compute_output > 0 else 0

    def record_response(self, index: int, outcome: int, start_ns: int,
                        compute_output_start_ns: int, end_ns: int) -> None:
        """TRITONBACKEND_ModelInstanceReportResponseStatistics: response number `index` of a
        request, with one of the RESPONSE_* outcomes. As Triton's: compute infer runs from
        the start to the compute output start (to the end for an empty or failed response
        without outputs), compute output from there to the end. INVALID_ARG, with Triton's
        words, for timestamps out of order."""
        with_output = compute_output_start_ns > 0 and outcome in (RESPONSE_SUCCESS, RESPONSE_FAIL)
        if with_output:
            if start_ns > compute_output_start_ns:
                raise TritonError.invalid_arg(
                    "Response start cannot happen after compute output start")
            if compute_output_start_ns > end_ns:
                raise TritonError.invalid_arg(
                    "Compute output start cannot happen after response end")
        elif start_ns > end_ns:
            raise TritonError.invalid_arg("Response start cannot happen after response end")
        total = end_ns - start_ns
        infer = compute_output_start_ns - start_ns if with_output else total
        output = end_ns - compute_output_start_ns if with_output else 0
        key = str(index)
        with self._lock:
            stats = self._response_stats.get(key)
            if stats is None:
                stats = self._response_stats[key] = [0] * 12
            if outcome != RESPONSE_CANCEL:
                stats[0] += 1
                stats[1] += infer
            if outcome == RESPONSE_SUCCESS or (outcome == RESPONSE_FAIL and output > 0):
                stats[2] += 1
                stats[3] += output
            slot = 4 + 2 * outcome  # success, fail, empty response, cancel
            stats[slot] += 1
            stats[slot + 1] += total

    def snapshot(self) -> StatisticsSnapshot:
        with self._lock:
            totals = self._all.counts()
            computed = totals.success.count - self._cache_hit_count
            for duration in (totals.compute_input, totals.compute_infer, totals.compute_output):
                duration.count = computed  # a cache hit computed nothing
            return StatisticsSnapshot(
                **vars(totals),
                name=self.name,
                version=self.version,
                namespace=self.namespace,
                last_inference_ms=self._last_inference_ms,
                batch_stats={
                    size: BatchStats(Duration(b[0], b[1]), Duration(b[0], b[2]),
                                     Duration(b[0], b[3]))
                    for size, b in self._batch_stats.items()
                },
                cache_hit=Duration(self._cache_hit_count, self._cache_hit_ns),
                cache_miss=Duration(self._cache_miss_count, self._cache_miss_ns),
                cache_enabled=self.cache_enabled,
                response_stats={
                    key: ResponseStats(*(Duration(r[i], r[i + 1]) for i in range(0, 12, 2)))
                    for key, r in sorted(self._response_stats.items())
                },
                gpus={device: counters.counts() for device, counters in self._gpus.items()},
                memory_usage=self._memory_usage(),
                summaries=self.summaries,
            )
