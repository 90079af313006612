"""The engine's metrics, under the names Triton's vLLM backend reports (its utils/metrics.py).

Created through the server's custom-metric registry (`model.server.metrics`, what
pb_utils.MetricFamily reaches), labelled by model and version, and served on the metrics port
next to Triton's own: token counters (vllm:prompt_tokens_total, vllm:generation_tokens_total),
latency histograms with vLLM's buckets (time to first token, time per output token, end-to-end
request latency), per-request token counts, and the scheduler's running/waiting gauges.
"""

from __future__ import annotations

from typing import Any

from tritium.backend import MetricKind

_TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                 5.0, 7.5, 10.0]
_TPOT_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5]
_LATENCY_BUCKETS = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
                    60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0]


def _one_two_five(limit: int) -> list[float]:
    """vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, ... up to `limit`."""
    buckets: list[float] = []
    exponent = 0
    while True:
        for mantissa in (1, 2, 5):
            value = mantissa * 10**exponent
            if value > limit:
                return buckets
            buckets.append(value)
        exponent += 1


class EngineMetrics:
    """One model version's series in each family."""

    def __init__(self, registry: Any, model: str, version: int, max_model_len: int) -> None:
        labels = {"model": model, "version": str(version)}
        self._series: list[tuple[Any, Any]] = []

        def series(name: str, description: str, kind: MetricKind,
                   buckets: list[float] | None = None) -> Any:
            family = registry.family(name, description, kind)
            metric = family.metric(labels, buckets)
            self._series.append((family, metric))
            return metric

        counter, gauge, histogram = MetricKind.COUNTER, MetricKind.GAUGE, MetricKind.HISTOGRAM
        self._prompt = series("vllm:prompt_tokens_total", "Number of prefill tokens processed.",
                              counter)
        self._generation = series("vllm:generation_tokens_total",
                                  "Number of generation tokens processed.", counter)
        self._ttft = series("vllm:time_to_first_token_seconds",
                            "Histogram of time to first token in seconds.", histogram,
                            _TTFT_BUCKETS)
        self._tpot = series("vllm:time_per_output_token_seconds",
                            "Histogram of time per output token in seconds.", histogram,
                            _TPOT_BUCKETS)
        self._e2e = series("vllm:e2e_request_latency_seconds",
                           "Histogram of end to end request latency in seconds.", histogram,
                           _LATENCY_BUCKETS)
        sizes = _one_two_five(max_model_len)
        self._request_prompt = series("vllm:request_prompt_tokens",
                                      "Number of prefill tokens processed.", histogram, sizes)
        self._request_generation = series("vllm:request_generation_tokens",
                                          "Number of generation tokens processed.", histogram,
                                          sizes)
        self._running = series("vllm:num_requests_running",
                               "Number of requests currently running.", gauge)
        self._waiting = series("vllm:num_requests_waiting",
                               "Number of requests waiting to be processed.", gauge)

    def prompt_tokens(self, count: int) -> None:
        self._prompt.increment(count)

    def generation_tokens(self, count: int) -> None:
        self._generation.increment(count)

    def first_token(self, seconds: float) -> None:
        self._ttft.observe(seconds)

    def output_token(self, seconds: float) -> None:
        self._tpot.observe(seconds)

    def finished(self, seconds: float, prompt_tokens: int, generation_tokens: int) -> None:
        """A request ended after `seconds`; plain numbers, so the metrics need not know the
        engine's Sequence (the engine imports the metrics, never the other way round)."""
        self._e2e.observe(seconds)
        self._request_prompt.observe(prompt_tokens)
        self._request_generation.observe(generation_tokens)

    def scheduler(self, running: int, waiting: int) -> None:
        self._running.set(running)
        self._waiting.set(waiting)

    def close(self) -> None:
        """Remove this model's series (the families stay for other models)."""
        for family, metric in self._series:
            family.remove(metric)
