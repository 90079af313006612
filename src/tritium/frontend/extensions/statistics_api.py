"""The statistics extension's answer: model statistics as Triton's JSON, and as its protobuf.

One document serves both frontends: HTTP sends it as it is, gRPC parses it into
`ModelStatisticsResponse` (the JSON field names are the protobuf's). The inference durations are
read by name from the snapshot, so a duration the recorder starts keeping (cache hits and
misses) is reported as soon as the snapshot carries it; one it does not keep reads as zero, as
Triton reports counters it never touched.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from google.protobuf import json_format
from tritonclient.grpc import service_pb2 as pb

from ...server import StatisticsSnapshot

# InferStatistics' durations, in Triton's order.
INFERENCE_DURATIONS = (
    "success", "fail", "queue", "compute_input", "compute_infer", "compute_output",
    "cache_hit", "cache_miss",
)
BATCH_DURATIONS = ("compute_input", "compute_infer", "compute_output")
# InferResponseStatistics' durations, in Triton's order.
RESPONSE_DURATIONS = (
    "compute_infer", "compute_output", "success", "fail", "empty_response", "cancel",
)


# TRITONSERVER_MemoryTypeString.
_MEMORY_TYPES = {0: "CPU", 1: "CPU_PINNED", 2: "GPU"}


def _duration(value: Any) -> dict[str, int]:
    if value is None:
        return {"count": 0, "ns": 0}
    return {"count": value.count, "ns": value.ns}


def model_stats_json(snapshot: StatisticsSnapshot) -> dict[str, Any]:
    """One model version's entry of `model_stats`, with Triton 2.51's members."""
    return {
        "name": snapshot.name,
        "version": snapshot.version,
        "last_inference": snapshot.last_inference_ms,
        "inference_count": snapshot.inference_count,
        "execution_count": snapshot.execution_count,
        "inference_stats": {
            name: _duration(getattr(snapshot, name, None)) for name in INFERENCE_DURATIONS
        },
        "response_stats": {
            index: {name: _duration(getattr(stats, name)) for name in RESPONSE_DURATIONS}
            for index, stats in snapshot.response_stats.items()
        },
        "batch_stats": [
            {"batch_size": size,
             **{name: _duration(getattr(stats, name)) for name in BATCH_DURATIONS}}
            for size, stats in sorted(snapshot.batch_stats.items())
        ],
        # What the backend reported its model and instances hold (compiled backends report it).
        "memory_usage": [
            {"type": _MEMORY_TYPES.get(usage.memory_type, "<invalid>"),
             "id": usage.memory_type_id, "byte_size": usage.byte_size}
            for usage in snapshot.memory_usage
        ],
    }


def statistics_json(snapshots: Iterable[StatisticsSnapshot]) -> dict[str, Any]:
    """The body of GET /v2/models[/M[/versions/V]]/stats."""
    return {"model_stats": [model_stats_json(s) for s in snapshots]}


def statistics_proto(snapshots: Iterable[StatisticsSnapshot]) -> pb.ModelStatisticsResponse:
    """The ModelStatistics RPC's response."""
    return json_format.ParseDict(statistics_json(snapshots), pb.ModelStatisticsResponse())


__all__ = ["statistics_json", "statistics_proto"]
