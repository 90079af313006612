"""Trace settings: the trace extension's global and per-model settings (Triton's TraceManager),
and the sampler of each setting in use (`trace.py`), which decides the requests to trace and
gathers their traces for the file.

The rules are Triton's: `--trace-config` gives the start-up default; a global update overrides
some fields of it; a model setting overrides some fields of the global one and follows the
global one for the rest; clearing a field (null) makes it follow again. The trace file is fixed
at start-up (never changed over the network). An update replaces the samplers it changes: what
they gathered is written, and the traces a setting may still take (`trace_count`, reported as
it counts down) carry over unless the update sets the count. Only the "triton" mode writes
traces, at the TIMESTAMPS level (TENSORS adds nothing here).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .errors import TritonError
from .trace import Trace, TraceFile, TraceSampler

if TYPE_CHECKING:
    from .request import InferenceRequest

LEVELS = ("TIMESTAMPS", "TENSORS")
MODES = ("triton", "opentelemetry")
# The fields a client may set or clear; `trace_file` is only set at start-up.
FIELDS = ("trace_level", "trace_rate", "trace_count", "log_frequency")

TRACE_FILE_REFUSED = "trace file location can not be updated through network protocol"


@dataclass(frozen=True)
class TraceSetting:
    """One effective setting. `trace_level` is empty when tracing is off."""

    trace_level: tuple[str, ...] = ()
    trace_rate: int = 1000
    trace_count: int = -1
    log_frequency: int = 0
    trace_file: str = ""
    trace_mode: str = "triton"
    # `--trace-config <mode>,<key>=<value>` settings other than file and log-frequency.
    config: tuple[tuple[str, str, str], ...] = field(default=())

    def invalid_reason(self) -> str | None:
        """Why this setting cannot trace (Triton accepts only disabling ones as invalid)."""
        if not self.trace_level:
            return None
        if self.trace_rate == 0:
            return "sample rate must be non-zero"
        if self.trace_mode == "triton" and not self.trace_file:
            return "trace file name is not given"
        return None

    def as_json(self) -> dict[str, Any]:
        """As Triton reports it: every value a string, the level a list."""
        return {
            "trace_level": list(self.trace_level) or ["OFF"],
            "trace_rate": str(self.trace_rate),
            "trace_count": str(self.trace_count),
            "log_frequency": str(self.log_frequency),
            "trace_file": self.trace_file,
            "trace_mode": self.trace_mode,
        }


class TraceSettings:
    """The start-up default, the global overrides, and each model's overrides."""

    def __init__(self, default: TraceSetting | None = None) -> None:
        self.default = default or TraceSetting()
        self._global: dict[str, Any] = {}
        self._models: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        # The sampler of each setting in use: "" the global one, else a model's own.
        self._samplers: dict[str, TraceSampler] = {}
        # Counts left by replaced samplers, for their successors.
        self._carried: dict[str, int] = {}
        self._files: dict[str, TraceFile] = {}
        # Whether any setting may trace: frontends ask nothing more of a server that doesn't.
        self.active = _writes(self.default)

    def get(self, model: str = "") -> TraceSetting:
        with self._lock:
            return self._current(model)

    def _current(self, model: str) -> TraceSetting:
        """The effective setting, its count as its sampler has counted it down."""
        setting = self._effective(model, self._global, self._models.get(model, {}))
        key = model if model in self._models else ""
        sampler = self._samplers.get(key)
        count = sampler.count if sampler is not None else self._carried.get(key)
        return setting if count is None else replace(setting, trace_count=count)

    def start(self, request: InferenceRequest, read: str, read_start_ns: int,
              read_end_ns: int) -> None:
        """Trace `request` if its model's setting samples it; its trace begins with the
        frontend's read of it (`read`: HTTP_RECV, GRPC_WAITREAD; stamped _START and _END)."""
        key = request.model_name if request.model_name in self._models else ""
        sampler = self._samplers.get(key)
        if sampler is None:
            with self._lock:
                sampler = self._samplers.get(key)
                if sampler is None:
                    sampler = self._samplers[key] = self._new_sampler(key)
        if sampler.take():
            trace = request.trace = Trace(sampler)
            trace.capture(f"{read}_START", read_start_ns)
            trace.capture(f"{read}_END", read_end_ns)

    def _new_sampler(self, key: str) -> TraceSampler:
        setting = self._effective(key, self._global, self._models.get(key, {}))
        file = None
        if _writes(setting):
            file = self._files.get(setting.trace_file)
            if file is None:
                file = self._files[setting.trace_file] = TraceFile(setting.trace_file)
        count = self._carried.pop(key, setting.trace_count)
        return TraceSampler(setting.trace_rate, count, setting.log_frequency, file,
                            setting.trace_level)

    def close(self) -> None:
        """The server stops: every sampler writes what it gathered, and the files end."""
        with self._lock:
            samplers, self._samplers = list(self._samplers.values()), {}
            files = list(self._files.values())
            self.active = False
        for sampler in samplers:
            sampler.retire()
        for file in files:
            file.close()

    def _effective(self, model: str, global_overrides: dict[str, Any],
                   model_overrides: dict[str, Any]) -> TraceSetting:
        setting = replace(self.default, **global_overrides)
        if model:
            setting = replace(setting, **model_overrides)
        return setting

    def update(self, model: str, changes: dict[str, Any]) -> TraceSetting:
        """Set (value) or clear (None) fields of the global setting (model "") or of a model's.

        Values are already parsed by the frontend. Nothing changes when the result could not
        trace (Triton's "Attempting to set invalid trace setting").
        """
        if "trace_file" in changes:
            raise TritonError.unsupported(TRACE_FILE_REFUSED)
        with self._lock:
            overrides = dict(self._models.get(model, {}) if model else self._global)
            for key in FIELDS:
                if key not in changes:
                    continue
                if changes[key] is None:
                    overrides.pop(key, None)
                else:
                    overrides[key] = changes[key]
            if model:
                setting = self._effective(model, self._global, overrides)
            else:
                setting = self._effective("", overrides, {})
            reason = setting.invalid_reason()
            if reason is not None:
                raise TritonError.invalid_arg(
                    f"Attempting to set invalid trace setting :{reason}"
                )
            self._replace_samplers(model, "trace_count" in changes)
            if not model:
                self._global = overrides
            elif overrides:
                self._models[model] = overrides
            else:
                self._models.pop(model, None)
            self.active = any(_writes(self._effective(name, self._global, self._models.get(
                name, {}))) for name in ("", *self._models))
            return self._current(model)

    def _replace_samplers(self, model: str, count_set: bool) -> None:
        """Before an update of the global setting (model "") or a model's: retire the samplers
        it changes, keeping their remaining counts for their successors unless the update sets
        the count (a model that gets a setting of its own starts from the global count left)."""
        if model:
            affected = [model] if model in self._samplers else []
            if not count_set and model not in self._models and "" in self._samplers:
                self._carried[model] = self._samplers[""].count
        else:
            affected = list(self._samplers)
        for key in affected:
            sampler = self._samplers.pop(key)
            follows_global = key and "trace_count" not in self._models.get(key, {})
            if count_set and (key == model or follows_global):
                self._carried.pop(key, None)
            else:
                self._carried[key] = sampler.count
            sampler.retire()


def _writes(setting: TraceSetting) -> bool:
    """Whether requests under `setting` may be traced to its file."""
    return (bool(setting.trace_level) and setting.trace_mode == "triton"
            and bool(setting.trace_file) and setting.trace_rate != 0)


def parse_trace_config(values: Iterable[str]) -> TraceSetting:
    """`--trace-config [<mode>,]<setting>=<value>` (repeatable) -> the start-up setting.

    Raises ValueError with a message for the command line.
    """
    setting = TraceSetting()
    levels: list[str] = []
    extra: list[tuple[str, str, str]] = []
    for text in values:
        head, _, assignment = text.rpartition(",")
        key, equals, value = assignment.partition("=")
        if not equals or not key:
            raise ValueError(
                f"--trace-config option format is '<mode>,<setting>=<value>' or "
                f"'<setting>=<value>'. Got {text}"
            )
        mode = head
        if mode and mode not in MODES:
            raise ValueError(f"invalid trace mode '{mode}' in --trace-config {text}")
        if not mode and key == "level":
            lower = value.lower()  # tritonserver's ParseTraceLevelOption
            if lower in ("false", "off"):
                levels.clear()
            elif lower in ("true", "on", "min", "max", "timestamps"):
                levels.append("TIMESTAMPS")
            elif lower == "tensors":
                levels.append("TENSORS")
            else:
                raise ValueError(f"invalid value for trace level option: {value}")
        elif not mode and key == "rate":
            setting = replace(setting, trace_rate=_option(text, key, value) % 2**32)
        elif not mode and key == "count":
            setting = replace(setting, trace_count=_option(text, key, value))
        elif not mode and key == "mode":
            if value not in MODES:
                raise ValueError(f"invalid trace mode '{value}' in --trace-config {text}")
            setting = replace(setting, trace_mode=value)
        elif mode in ("", "triton") and key == "file":
            setting = replace(setting, trace_file=value)
        elif mode in ("", "triton") and key == "log-frequency":
            setting = replace(setting, log_frequency=_option(text, text.rpartition("=")[0],
                                                             value) % 2**32)
        elif mode:
            extra.append((mode, key, value))
        else:
            raise ValueError(f"unknown trace setting '{key}' in --trace-config {text}")
    ordered = tuple(level for level in LEVELS if level in levels)
    if setting.trace_mode == "opentelemetry":
        _check_bsp(extra)
    return replace(setting, trace_level=ordered, config=tuple(extra))


class BadOption(ValueError):
    """A message tritonserver prints whole (its own `Bad option: "..."` line)."""


_BSP_DEFAULTS = {"bsp_max_queue_size": "2048", "bsp_schedule_delay": "5000",
                 "bsp_max_export_batch_size": "512"}


def _uint32(value: str) -> bool:
    return value.strip().isdigit() and int(value) < 2**32


def _check_bsp(extra: list[tuple[str, str, str]]) -> None:
    """tritonserver's ProcessOpenTelemetryBatchSpanProcessorArgs: the batch span processor
    settings given as --trace-config opentelemetry,<key>=N, else OTEL_<KEY> from the
    environment, must be unsigned 32-bit integers."""
    given = set()
    for mode, key, value in extra:
        if mode == "opentelemetry" and key in _BSP_DEFAULTS:
            given.add(key)
            if not _uint32(value):
                raise BadOption(f'Bad option: "--trace-config opentelemetry,{key}".\n'
                                f"Invalid option value. Got {value}")
    for key, default in _BSP_DEFAULTS.items():
        value = os.environ.get("OTEL_" + key.upper(), default)
        if key not in given and not _uint32(value):
            raise BadOption(f'Bad option: "OTEL_{key.upper()}".\nInvalid option value. Got {value}')


_LEADING_INTEGER = re.compile(r"\s*([+-]?\d+)")


def leading_integer(text: str) -> int | None:
    """The integer C++'s stoi reads at the start of `text` (spaces before it and anything after
    it ignored), as Triton reads trace settings; None when there is none. Its range is not
    checked (stoi fails past 32 bits)."""
    match = _LEADING_INTEGER.match(text)
    return None if match is None else int(match.group(1))


def _option(text: str, name: str, value: str) -> int:
    """A number of --trace-config as tritonserver reads it: stoi's reading, refused past 32
    bits (`Bad option: "--trace-config <name>"`); the caller keeps a rate or log frequency
    as an unsigned 32-bit number (a negative one wraps around), a count as it is."""
    number = leading_integer(value)
    if number is None:
        raise ValueError(f"invalid integer in --trace-config {text}")
    if not -2**31 <= number < 2**31:
        raise BadOption(f'Bad option: "--trace-config {name}".\n'
                        f"Provided option value is out of bound. Got {value}")
    return number


__all__ = ["BadOption", "FIELDS", "LEVELS", "TRACE_FILE_REFUSED", "TraceSetting", "TraceSettings",
           "parse_trace_config"]
