"""Prometheus text exposition (format 0.0.4), written as Triton's prometheus-cpp writes it.

Counterpart: prometheus-cpp's TextSerializer, which Triton's metrics endpoint uses. Written here
rather than through prometheus-client because that library renames counters to `*_total` and
prints every value as a float: Triton's dashboards and tests read `nv_inference_count 3`
under `# TYPE nv_inference_count counter`. Labels are sorted by name (prometheus-cpp keeps them
in a sorted map); integral values print without a fraction; +Inf, -Inf and NaN as Prometheus
spells them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

KINDS = ("counter", "gauge", "histogram", "summary", "untyped")


@dataclass
class Sample:
    """One line: the family name plus `suffix` (`_bucket`, `_sum`, ...), labels, value."""

    labels: dict[str, str]
    value: float
    suffix: str = ""


@dataclass
class Family:
    name: str
    help: str
    kind: str
    samples: list[Sample] = field(default_factory=list)

    def add(self, labels: dict[str, str], value: float, suffix: str = "") -> None:
        self.samples.append(Sample(labels, value, suffix))


def format_value(value: float) -> str:
    """As prometheus-cpp prints a double: integers without `.0`, others shortest round-trip."""
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer() and abs(value) < 2**63:
        return str(int(value))
    return repr(value)


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    inner = ",".join(f'{key}="{_escape_label(str(labels[key]))}"' for key in sorted(labels))
    return "{" + inner + "}"


def histogram_samples(family: Family, labels: dict[str, str], bounds: Sequence[float],
                      counts: Sequence[int], total: float) -> None:
    """Add a histogram's cumulative `_bucket` lines (the last count is the +Inf bucket), then
    its `_sum` and `_count`, in prometheus-cpp's order (count, sum, buckets)."""
    cumulative = []
    running = 0
    for count in counts:
        running += count
        cumulative.append(running)
    family.add(labels, running, "_count")
    family.add(labels, total, "_sum")
    for bound, count in zip([*bounds, math.inf], cumulative, strict=True):
        family.add({**labels, "le": format_value(float(bound))}, count, "_bucket")


def render(families: Iterable[Family]) -> bytes:
    """The exposition text of `families`, each with its HELP and TYPE lines. A family with no
    metric (none made yet, or all deleted) is left out, as prometheus-cpp leaves it out of
    Triton's."""
    lines: list[str] = []
    for family in families:
        if not family.samples:
            continue
        lines.append(f"# HELP {family.name} {_escape_help(family.help)}")
        lines.append(f"# TYPE {family.name} {family.kind}")
        for sample in family.samples:
            lines.append(f"{family.name}{sample.suffix}{_labels(sample.labels)} "
                         f"{format_value(sample.value)}")
    return ("\n".join(lines) + "\n").encode() if lines else b""


__all__ = ["KINDS", "Family", "Sample", "format_value", "histogram_samples", "render"]
