"""The metrics endpoint: Prometheus text on --metrics-port with Triton's metric names.

Counts are not kept twice: a collector reads the server's per model-version statistics at scrape
time. Families are exposed "untyped" because prometheus-client renames counters to `*_total`,
and dashboards built for Triton query the bare names (`nv_inference_count`, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import make_asgi_app
from prometheus_client.core import (
    CollectorRegistry,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
    UntypedMetricFamily,
)

from ..server import InferenceServer
from .asgi_endpoint import AsgiEndpoint

_NS_PER_US = 1000

# (metric name, help, value from a StatisticsSnapshot)
_FAMILIES: list[tuple[str, str, Callable]] = [
    ("nv_inference_request_success", "Number of successful inference requests, all batch sizes",
     lambda s: s.success.count),
    ("nv_inference_request_failure", "Number of failed inference requests, all batch sizes",
     lambda s: s.fail.count),
    ("nv_inference_count", "Number of inferences performed (does not include cached requests)",
     lambda s: s.inference_count),
    ("nv_inference_exec_count",
     "Number of model executions performed (does not include cached requests)",
     lambda s: s.execution_count),
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
     "Cumulative inference compute output duration in microseconds (does not include cached "
     "requests)",
     lambda s: s.compute_output.ns // _NS_PER_US),
]

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


class ServerCollector:
    """Turns InferenceServer.statistics() into metric families on every scrape."""

    def __init__(self, server: InferenceServer) -> None:
        self._server = server

    def collect(self) -> Iterator[Metric]:
        snapshots = self._server.statistics()
        for name, help_text, value in _FAMILIES:
            family = UntypedMetricFamily(name, help_text, labels=["model", "version"])
            for snap in snapshots:
                family.add_metric([snap.name, snap.version], value(snap))
            yield family
        cached = [snap for snap in snapshots if snap.cache_enabled]
        if cached:
            for name, help_text, value in _CACHE_FAMILIES:
                family = UntypedMetricFamily(name, help_text, labels=["model", "version"])
                for snap in cached:
                    family.add_metric([snap.name, snap.version], value(snap))
                yield family
        cache = self._server.cache_statistics()
        if cache is not None:
            for name, help_text, value in _CACHE_GAUGES:
                yield GaugeMetricFamily(name, help_text, value=value(cache))
        pending = GaugeMetricFamily(
            "nv_inference_pending_request_count",
            "Instantaneous number of pending requests awaiting execution per-model.",
            labels=["model", "version"],
        )
        for model_name, version, count in self._server.pending_requests():
            pending.add_metric([model_name, version], count)
        yield pending
        yield from self._custom()

    def _custom(self) -> Iterator[Metric]:
        """Families backends created (pb_utils.MetricFamily), with their own labels."""
        for family in self._server.metrics.families():
            metrics = family.metrics()
            labels = sorted({k for m in metrics for k in m.labels})
            if family.kind.value == "histogram":
                histogram = HistogramMetricFamily(family.name, family.description, labels=labels)
                for m in metrics:
                    bounds = [*(str(b) for b in m.buckets or []), "+Inf"]
                    cumulative, running = [], 0
                    for bound, count in zip(bounds, m.bucket_counts, strict=True):
                        running += count
                        cumulative.append((bound, running))
                    histogram.add_metric([m.labels.get(k, "") for k in labels], cumulative, m.sum)
                yield histogram
            else:
                kind = GaugeMetricFamily if family.kind.value == "gauge" else UntypedMetricFamily
                out = kind(family.name, family.description, labels=labels)
                for m in metrics:
                    out.add_metric([m.labels.get(k, "") for k in labels], m.value)
                yield out


class MetricsFrontend(AsgiEndpoint):
    """Prometheus text for one InferenceServer on address:port, served like the HTTP frontend."""

    def __init__(self, server: InferenceServer, address: str, port: int) -> None:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(ServerCollector(server))
        super().__init__(make_asgi_app(registry), address, port, "Metrics Service")
