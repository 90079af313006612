"""Request traces in Triton's "triton" trace mode (Triton's TraceManager::Trace, TraceSetting
and TraceFile): which requests are traced, what a trace records, and how it reaches the file.

A frontend starts a trace for the requests its model's trace setting samples (every
`trace_rate`-th request, at most `trace_count` of them), and stamps its own activities
(HTTP_RECV_START, GRPC_SEND_END, ...). The server core stamps the request's (REQUEST_START,
QUEUE_START, COMPUTE_START, COMPUTE_INPUT_END, COMPUTE_OUTPUT_START, COMPUTE_END, REQUEST_END)
when the request ends, and an ensemble step gets a child trace naming its parent. When the
frontend has sent the answer, the trace, its children included, goes to its setting's stream,
in Triton's format: a JSON array of objects, one per activity, each `{"id": N, "timestamps":
[{"name": ..., "ns": ...}]}`, each request's first one preceded by `{"id": N, "model_name": ...,
"model_version": V[, "request_id": ...][, "parent_id": P]}`. Timestamps are the monotonic clock
in nanoseconds (Triton's steady clock). At the TENSORS level a trace also records each input of
its request as the model queues it (TENSOR_QUEUE_INPUT) and each output of its responses
(TENSOR_BACKEND_OUTPUT), as `{"id": N, "activity": ..., "tensor": {"name": ..., "data": "v,v,...",
"shape": "d,d", "dtype": ...}}` with the values written as Triton writes them.

The stream is written, as Triton writes it, to `<file>.<index>` each time `log_frequency`
traces have gathered or the last of `trace_count` traces is in, and otherwise to `<file>` when
the setting is replaced or the server stops.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from time import perf_counter_ns
from typing import IO

import numpy as np

from .tensor import Tensor

log = logging.getLogger("tritium.trace")

# Trace ids, unique in the process (Triton's core numbers its traces from 1).
_ids = itertools.count(1)


class TraceFile:
    """One trace file, and its indexed siblings `<path>.0`, `<path>.1`, ..."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._handle: IO[str] | None = None
        self._index = itertools.count()
        self._closed = False

    def save(self, text: str, indexed: bool) -> None:
        """Traces (objects joined by commas) to the next indexed file, or appended to the
        array of the file itself (opened, and emptied, at its first save)."""
        if self._closed:
            return  # a trace that ended after the server stopped
        try:
            if indexed:
                with open(f"{self.path}.{next(self._index)}", "w", encoding="utf-8") as file:
                    file.write("[" + text + "]")
                return
            with self._lock:
                if self._handle is None:
                    self._handle = open(self.path, "w", encoding="utf-8")  # noqa: SIM115
                    self._handle.write("[")
                else:
                    self._handle.write(",")
                self._handle.write(text)
                self._handle.flush()
        except OSError as exc:
            log.error("failed creating trace file: %s", exc)

    def close(self) -> None:
        """End the file's array (when anything was written to it)."""
        with self._lock:
            handle, self._handle = self._handle, None
            self._closed = True
        if handle is not None:
            try:
                handle.write("]")
                handle.close()
            except OSError as exc:
                log.error("failed writing trace file: %s", exc)


class TraceSampler:
    """One trace setting in use (Triton's TraceSetting): which requests it samples, how many
    it may still trace (`count`, -1 for no limit), and the traces gathered for its file."""

    def __init__(self, rate: int, count: int, log_frequency: int, file: TraceFile | None,
                 levels: tuple[str, ...] = ("TIMESTAMPS",)) -> None:
        # What its traces record: activity timestamps, tensors, or both.
        self.timestamps = "TIMESTAMPS" in levels
        self.tensors = "TENSORS" in levels
        self.rate = rate
        self.count = count
        self.log_frequency = log_frequency
        self.file = file
        self._lock = threading.Lock()
        self._sample = 0  # requests seen
        self._collected = 0  # traces written to the stream
        self._stream: list[str] = []
        self._retired = False

    def take(self) -> bool:
        """Whether this request is traced: every `rate`-th one, while `count` lasts."""
        with self._lock:
            if self.rate == 0 or self.count == 0 or self.file is None:
                return False
            self._sample += 1
            if self._sample % self.rate:
                return False
            if self.count > 0:
                self.count -= 1
            return True

    def write(self, text: str) -> None:
        """A finished trace: into the stream, and the stream to an indexed file when the last
        of `count` traces is in or `log_frequency` of them have gathered."""
        with self._lock:
            self._stream.append(text)
            self._collected += 1
            full = (self.count == 0 and self._collected == self._sample) or (
                self.log_frequency != 0 and len(self._stream) >= self.log_frequency)
            if not (full or self._retired):
                return
            stream, self._stream = self._stream, []
        assert self.file is not None
        self.file.save(",".join(stream), indexed=full or self.log_frequency != 0)

    def retire(self) -> None:
        """The setting is replaced (or the server stops): what it gathered goes to the file,
        indexed when `log_frequency` is set; traces still running follow as they end."""
        with self._lock:
            self._retired = True
            stream, self._stream = self._stream, []
        if stream and self.file is not None:
            self.file.save(",".join(stream), indexed=self.log_frequency != 0)


class Trace:
    """One traced request, and the traces of the requests it spawns (an ensemble's steps),
    which are written with it."""

    __slots__ = ("id", "parent_id", "tensors", "_root", "_parts", "_sampler", "_custom")

    def __init__(self, sampler: TraceSampler, root: Trace | None = None,
                 parent_id: int = 0) -> None:
        self.id = next(_ids)
        self.parent_id = parent_id
        self._root = root if root is not None else self
        self._sampler = sampler
        self.tensors = sampler.tensors  # whether it records tensors (the TENSORS level)
        # The root's: each trace's JSON objects, by trace id, in the order they were made.
        self._parts: dict[int, list[str]] = {} if root is None else root._parts
        self._parts[self.id] = []
        # Activities a backend reported while the request ran (Triton's
        # TRITONSERVER_InferenceTraceReportActivity), placed among the server's by time.
        self._custom: list[tuple[str, int]] = []

    def child(self) -> Trace:
        """The trace of a request this one's request makes (Triton's spawned child trace)."""
        return Trace(self._sampler, self._root, self.id)

    def capture(self, name: str, ns: int) -> None:
        """A frontend's activity (HTTP_RECV_START, GRPC_SEND_END, ...)."""
        if self._sampler.timestamps:
            self._parts[self.id].append(_timestamp(self.id, name, ns))

    def record_tensor(self, activity: str, tensor: Tensor) -> None:
        """A tensor at the TENSORS level: TENSOR_QUEUE_INPUT, TENSOR_BACKEND_OUTPUT."""
        record = {"id": self.id, "activity": activity, "tensor": {
            "name": tensor.name, "data": _tensor_values(tensor),
            "shape": ",".join(str(d) for d in tensor.shape), "dtype": tensor.datatype}}
        self._parts[self.id].append(json.dumps(record, separators=(",", ":"),
                                               ensure_ascii=False))

    def report_activity(self, name: str, ns: int) -> None:
        """A backend's own activity (CUSTOM_ACTIVITY_START, ...) during the request."""
        self._custom.append((name, ns))

    def record_request(self, model: str, version: int, request_id: str,
                       activities: Iterable[tuple[str, int]]) -> None:
        """The server's account of the request, when it ends: which model served it, then
        its activities in order, the backend's own among them (those with no time are left
        out)."""
        if not self._sampler.timestamps:
            return
        header = {"id": self.id, "model_name": model, "model_version": version}
        if request_id:
            header["request_id"] = request_id
        if self.parent_id:
            header["parent_id"] = self.parent_id
        parts = self._parts[self.id]
        parts.append(json.dumps(header, separators=(",", ":")))
        timed = [(name, ns) for name, ns in activities if ns]
        if self._custom:
            timed = sorted(timed + self._custom, key=lambda activity: activity[1])
        parts.extend(_timestamp(self.id, name, ns) for name, ns in timed)

    def responded(self) -> None:
        """The frontend has the request's (first) response: INFER_RESPONSE_COMPLETE, which
        Triton's frontends stamp in their response callback, before sending it. With
        `preserve_ordering` it is when a held response was let go, which is what Triton's
        L0_batcher compares between requests."""
        self.capture("INFER_RESPONSE_COMPLETE", perf_counter_ns())

    @contextmanager
    def sending(self, send: str) -> Iterator[None]:
        """Around the frontend's sending of the answer (`send`: HTTP_SEND, GRPC_SEND; stamped
        _START and _END, after the response's INFER_RESPONSE_COMPLETE), after which the trace
        is finished."""
        self.responded()
        self.capture(f"{send}_START", perf_counter_ns())
        try:
            yield
        finally:
            self.capture(f"{send}_END", perf_counter_ns())
            self.finish()

    def finish(self) -> None:
        """The frontend has answered: the trace and its children go to the stream."""
        text = ",".join(part for parts in self._parts.values() for part in parts)
        if text:
            self._sampler.write(text)


def _tensor_values(tensor: Tensor) -> str:
    """The values as Triton's trace writes them: comma-separated, booleans as 1/0, floats as
    C++ streams them (six significant digits), each string element in quotes; FP16 and BF16
    are left out (Triton writes them as nothing). 8-bit integers are written as numbers
    (Triton streams them as raw characters, which can make its file unreadable JSON)."""
    if tensor.datatype in ("FP16", "BF16"):
        return ""
    values = np.asarray(tensor.data).reshape(-1)
    if tensor.datatype == "BYTES":
        texts = (v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
                 for v in values)
        return ",".join(f'"{text}"' for text in texts)
    if tensor.datatype in ("FP32", "FP64"):
        return ",".join(f"{v:g}" for v in values.tolist())
    return ",".join(str(int(v)) for v in values.tolist())


def _timestamp(trace_id: int, name: str, ns: int) -> str:
    return f'{{"id":{trace_id},"timestamps":[{{"name":"{name}","ns":{ns}}}]}}'


__all__ = ["Trace", "TraceFile", "TraceSampler"]
