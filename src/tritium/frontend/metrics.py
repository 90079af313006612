"""The metrics endpoint: Prometheus text on --metrics-port with Triton's metric names and types.

Counterpart: Triton's HTTPMetricsServer and Metrics. Counts are not kept twice: the families
are built from the server's per model-version statistics at scrape time, and written by
`prometheus_text` under Triton's exact names and `# TYPE`s (counters, gauges, custom
`pb_utils.MetricFamily` kinds as declared). GPU and CPU figures are the last ones their pollers
(`gpu_metrics`, `cpu_metrics`) read, every --metrics-interval-ms. The endpoint is the HTTP/REST
frontend's own httptools endpoint (`http.endpoint`), answering GET /metrics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ..server import InferenceServer
from ..statistics import InferenceCounts, StatisticsSnapshot
from .cpu_metrics import CpuMetrics
from .gpu_metrics import FAMILIES as GPU_FAMILIES
from .gpu_metrics import GpuMetrics
from .http.connection import HttpConnection, Request
from .http.endpoint import HttpEndpoint
from .prometheus_text import Family, format_value, histogram_samples, render

_NS_PER_US = 1000

# Triton's default --pinned-memory-pool-byte-size (256 MB).
DEFAULT_PINNED_POOL_BYTES = 1 << 28

_COUNTER_FAMILIES: list[tuple[str, str, Callable | None]] = [
    ("nv_inference_request_success", "Number of successful inference requests, all batch sizes",
     lambda s: s.success.count),
    ("nv_inference_request_failure", "Number of failed inference requests, all batch sizes",
     None),  # one series per failure reason
    ("nv_inference_count", "Number of inferences performed (does not include cached requests)",
     lambda s: s.inference_count),
    ("nv_inference_exec_count",
     "Number of model executions performed (does not include cached requests)",
     lambda s: s.execution_count),
]

# Dropped with --metrics-config counter_latencies=false, as in Triton.
_LATENCY_FAMILIES: list[tuple[str, str, Callable]] = [
    ("nv_inference_request_duration_us",
     "Cumulative inference request duration in microseconds (includes cached requests)",
     lambda s: (s.success.ns + s.fail.ns) // _NS_PER_US),
    ("nv_inference_queue_duration_us",
     "Cumulative inference queuing duration in microseconds (includes cached requests)",
     lambda s: s.queue.ns // _NS_PER_US),
    ("nv_inference_compute_input_duration_us",
     "Cumulative compute input duration in microseconds (does not include cached requests)",
     lambda s: s.compute_input.ns // _NS_PER_US),
    ("nv_inference_compute_infer_duration_us",
     "Cumulative compute inference duration in microseconds (does not include cached requests)",
     lambda s: s.compute_infer.ns // _NS_PER_US),
    ("nv_inference_compute_output_duration_us",
     ("Cumulative inference compute output duration in microseconds (does not include cached "
      "requests)"),
     lambda s: s.compute_output.ns // _NS_PER_US),
]

# --metrics-config summary_latencies=true: Triton's summaries, by the kind of duration each
# summarizes (latency_summary.KINDS); the request's is left out for a model with the response
# cache (as Triton 2.51 does), the cache's are only for such a model.
_SUMMARY_FAMILIES: list[tuple[str, str, str]] = [
    ("nv_inference_request_summary_us", "request",
     "Summary of inference request duration in microseconds (includes cached requests)"),
    ("nv_inference_queue_summary_us", "queue",
     "Summary of inference queuing duration in microseconds (includes cached requests)"),
    ("nv_inference_compute_input_summary_us", "compute_input",
     "Cumulative compute input duration in microseconds (does not include cached requests)"),
    ("nv_inference_compute_infer_summary_us", "compute_infer",
     "Cumulative compute inference duration in microseconds (does not include cached "
     "requests)"),
    ("nv_inference_compute_output_summary_us", "compute_output",
     "Cumulative inference compute output duration in microseconds (does not include cached "
     "requests)"),
    ("nv_cache_hit_summary_per_model", "cache_hit",
     "Summary of cache hit counts/durations per model, in microseconds."),
    ("nv_cache_miss_summary_per_model", "cache_miss",
     "Summary of cache miss counts/durations per model, in microseconds."),
]
_CACHE_ONLY = ("cache_hit", "cache_miss")

# Per model with the response cache enabled (Triton's nv_cache_*_per_model counters).
_CACHE_FAMILIES: list[tuple[str, str, Callable]] = [
    ("nv_cache_num_hits_per_model", "Number of cache hits per model",
     lambda s: s.cache_hit.count),
    ("nv_cache_hit_duration_per_model",
     "Total cache hit duration per model, in microseconds",
     lambda s: s.cache_hit.ns // _NS_PER_US),
    ("nv_cache_num_misses_per_model", "Number of cache misses per model",
     lambda s: s.cache_miss.count),
    ("nv_cache_miss_duration_per_model",
     "Total cache miss (insert+lookup) duration per model, in microseconds",
     lambda s: s.cache_miss.ns // _NS_PER_US),
]

# The server-wide response cache (Triton's nv_cache_* gauges).
_CACHE_GAUGES: list[tuple[str, str, Callable]] = [
    ("nv_cache_util", "Cache utilization [0.0 - 1.0]", lambda c: c.utilization),
    ("nv_cache_num_entries", "Number of responses stored in response cache",
     lambda c: c.entries),
    ("nv_cache_num_hits", "Number of cache hits in response cache", lambda c: c.hits),
    ("nv_cache_num_misses", "Number of cache misses in response cache", lambda c: c.misses),
    ("nv_cache_num_lookups", "Number of cache lookups in response cache", lambda c: c.lookups),
    ("nv_cache_num_evictions", "Number of cache evictions in response cache",
     lambda c: c.evictions),
    ("nv_cache_lookup_duration",
     "Total cache lookup duration (hit and miss), in microseconds",
     lambda c: c.lookup_ns // _NS_PER_US),
    ("nv_cache_insertion_duration", "Total cache insertion duration, in microseconds",
     lambda c: c.insertion_ns // _NS_PER_US),
]


def _model_labels(name: str, namespace: str, version: str) -> dict[str, str]:
    """A model version's labels; with --model-namespacing also its `namespace` (its
    repository), as Triton labels them."""
    if namespace:
        return {"model": name, "namespace": namespace, "version": version}
    return {"model": name, "version": version}


def _summary_families(snapshots: list[StatisticsSnapshot]) -> Iterator[Family]:
    """The latency summaries of the models that keep them: `_count`, `_sum`, then one line per
    quantile, as prometheus-cpp writes a summary."""
    summarized = [snap for snap in snapshots if snap.summaries is not None]
    if not summarized:
        return
    for name, kind, help_text in _SUMMARY_FAMILIES:
        family = Family(name, help_text, "summary")
        for snap in summarized:
            if kind in _CACHE_ONLY and not snap.cache_enabled:
                continue
            if kind == "request" and snap.cache_enabled:
                continue
            assert snap.summaries is not None
            summary = snap.summaries.snapshot(kind)
            labels = _model_labels(snap.name, snap.namespace, snap.version)
            family.add(labels, summary.count, "_count")
            family.add(labels, summary.sum_us, "_sum")
            for quantile, value in summary.quantiles:
                family.add({**labels, "quantile": format_value(quantile)}, value)
        if family.samples:
            yield family


class ServerMetrics:
    """Triton's metric families for one InferenceServer, built on every scrape."""

    def __init__(self, server: InferenceServer, cpu: CpuMetrics | None = None,
                 counter_latencies: bool = True, gpu: GpuMetrics | None = None,
                 pinned_pool_bytes: int = DEFAULT_PINNED_POOL_BYTES) -> None:
        self._server = server
        self._cpu = cpu
        self._gpu = gpu
        self._pinned_pool_bytes = pinned_pool_bytes
        self._counters: list[tuple[str, str, Callable | None]] = [
            *_COUNTER_FAMILIES, *(_LATENCY_FAMILIES if counter_latencies else [])]

    def families(self) -> Iterator[Family]:
        snapshots = self._server.statistics()
        series = [part for snap in snapshots for part in self._per_gpu(snap)]
        for name, help_text, value in self._counters:
            family = Family(name, help_text, "counter")
            for labels, counts in series:
                if value is None:
                    for reason, count in counts.fail_reasons.items():
                        family.add({**labels, "reason": reason}, count)
                else:
                    family.add(labels, value(counts))
            yield family
        yield from _summary_families(snapshots)
        cached = [snap for snap in snapshots if snap.cache_enabled]
        if cached:
            for name, help_text, value in _CACHE_FAMILIES:
                family = Family(name, help_text, "counter")
                for snap in cached:
                    family.add(_model_labels(snap.name, snap.namespace, snap.version), value(snap))
                yield family
        cache = self._server.cache_statistics()
        if cache is not None:
            for name, help_text, value in _CACHE_GAUGES:
                family = Family(name, help_text, "gauge")
                family.add({}, value(cache))
                yield family
        pending = Family("nv_inference_pending_request_count",
                         "Instantaneous number of pending requests awaiting execution per-model.",
                         "gauge")
        for model_name, namespace, version, count in self._server.pending_requests():
            pending.add(_model_labels(model_name, namespace, version), count)
        yield pending
        yield from self._pinned_pool_families()
        if self._gpu is not None:
            yield from self._gpu_families(self._gpu)
        if self._cpu is not None and self._cpu.available:
            yield from self._cpu_families(self._cpu)
        yield from self._custom()

    def _per_gpu(self, snap: StatisticsSnapshot) -> list[tuple[dict[str, str], InferenceCounts]]:
        """A model version's inference series, as Triton's per-instance reporters make them:
        one labelled model and version, and one more per GPU its instances ran on, labelled
        with that GPU's `gpu_uuid` too."""
        labels = _model_labels(snap.name, snap.namespace, snap.version)
        uuids = {device: uuid for device in snap.gpus
                 if self._gpu is not None and (uuid := self._gpu.uuid_of(device)) is not None}
        return [(labels, snap.without_gpus(uuids)),
                *(({**labels, "gpu_uuid": uuid}, snap.gpus[device])
                  for device, uuid in sorted(uuids.items()))]

    @staticmethod
    def _gpu_families(gpu: GpuMetrics) -> Iterator[Family]:
        """One series per GPU, labelled gpu_uuid; a family no GPU could give is left out."""
        readings = gpu.readings
        for name, help_text, kind in GPU_FAMILIES:
            family = Family(name, help_text, kind)
            for uuid, figures in readings.items():
                if name in figures:
                    family.add({"gpu_uuid": uuid}, figures[name])
            if family.samples:
                yield family

    def _pinned_pool_families(self) -> Iterator[Family]:
        """Triton's pinned memory pool gauges, which it exports whenever metrics are on (a
        CPU-only build too): its size is --pinned-memory-pool-byte-size, and Tritium never
        stages a tensor in it, so none of it is in use."""
        for name, help_text, value in (
            ("nv_pinned_memory_pool_total_bytes", "Pinned memory pool total memory size, in bytes",
             self._pinned_pool_bytes),
            ("nv_pinned_memory_pool_used_bytes", "Pinned memory pool used memory size, in bytes",
             0),
        ):
            family = Family(name, help_text, "gauge")
            family.add({}, value)
            yield family

    @staticmethod
    def _cpu_families(cpu: CpuMetrics) -> Iterator[Family]:
        for name, help_text, value in (
            ("nv_cpu_utilization", "CPU utilization rate [0.0 - 1.0]", cpu.utilization),
            ("nv_cpu_memory_total_bytes", "CPU total memory (RAM), in bytes", cpu.memory_total),
            ("nv_cpu_memory_used_bytes", "CPU used memory (RAM), in bytes", cpu.memory_used),
        ):
            family = Family(name, help_text, "gauge")
            family.add({}, value)
            yield family

    def _custom(self) -> Iterator[Family]:
        """Families backends created (pb_utils.MetricFamily), typed as declared."""
        for custom in self._server.metrics.families():
            family = Family(custom.name, custom.description, custom.kind.value)
            for metric in custom.metrics():
                if custom.kind.value == "histogram":
                    histogram_samples(family, metric.labels, metric.buckets or [],
                                      metric.bucket_counts, metric.sum)
                else:
                    family.add(metric.labels, metric.value)
            yield family

    def text(self) -> bytes:
        return render(self.families())


_CONTENT_TYPE = b"text/plain; charset=utf-8"


class MetricsFrontend(HttpEndpoint):
    """GET /metrics for one InferenceServer on address:port, on the lean HTTP server."""

    def __init__(self, server: InferenceServer, address: str, port: int,
                 interval_ms: float = 2000.0, allow_cpu_metrics: bool = True,
                 counter_latencies: bool = True, allow_gpu_metrics: bool = True,
                 pinned_pool_bytes: int = DEFAULT_PINNED_POOL_BYTES) -> None:
        self._cpu = CpuMetrics(interval_ms / 1000.0) if allow_cpu_metrics else None
        self._gpu = (GpuMetrics(server.gpus.devices, interval_ms / 1000.0)
                     if allow_gpu_metrics else None)
        self.metrics = ServerMetrics(server, self._cpu, counter_latencies, self._gpu,
                                     pinned_pool_bytes)
        super().__init__(self._answer, address, port, "Metrics Service")

    def _answer(self, connection: HttpConnection, request: Request) -> None:
        # As Triton's metrics server: only GET, and any other path an empty 200.
        if request.method != b"GET":
            body = b'{"error":"Method Not Allowed"}'
            connection.respond(
                405, b"content-length: %d\r\ncontent-type: text/plain\r\n" % len(body), body)
            return
        body = self.metrics.text() if request.path == "/metrics" else b""
        connection.respond(200, b"content-length: %d\r\ncontent-type: %s\r\n"
                           % (len(body), _CONTENT_TYPE), body)

    async def start(self) -> None:
        await super().start()
        if self._cpu is not None:
            self._cpu.start()
        if self._gpu is not None:
            self._gpu.start()

    async def stop(self, grace: float) -> None:
        if self._cpu is not None:
            self._cpu.stop()
        if self._gpu is not None:
            self._gpu.stop()
        await super().stop(grace)
