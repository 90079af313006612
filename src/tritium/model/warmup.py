"""Model warmup: the configuration's `model_warmup` samples, run on each instance before it
serves (Triton's TritonModelInstance::GenerateWarmupData and WarmUp).

A sample is `batch_size` requests of batch 1 (no request at all for `batch_size` 0), sent
together to one execution, `count` times (at least once). Each input's data is zeros, random
bytes (zeros for a STRING input, whose elements are then empty), or the start of a file in the
model's `warmup/` directory (all of it for a STRING input, read as Triton's length-prefixed
elements). An input the configuration does not declare (a sequence control, such as START or
READY) is added after the request is checked, as Triton adds override inputs. The requests
bypass the scheduler and go straight to the instance (through the rate limiter, if any); as
in Triton they count in the model's statistics. Any error response fails the sample, and
with it the instance and the load.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter_ns

import numpy as np
from tritonclient.grpc import model_config_pb2 as mc

from ..errors import TritonError
from ..request import RESPONSE_COMPLETE_FINAL, InferenceRequest, InferenceResponse, ResponseSender
from ..statistics import ModelStatistics, failure_reason
from ..tensor import Tensor, bytes_from_wire, element_count, numpy_dtype, wire_datatype
from .request_normalizer import normalize_request

log = logging.getLogger("tritium.model")

# Triton's kWarmupDataFolder: where `input_data_file` names a file, in the model's directory.
WARMUP_DATA_FOLDER = "warmup"
# Requests made by the model itself have no id: Triton's messages about them start so.
_PREFIX = "[request id: <id_unknown>] "


@dataclass(frozen=True)
class _SampleRequest:
    """One request of a sample: its inputs, checked, and its batch size."""

    inputs: tuple[Tensor, ...]
    batch_size: int


@dataclass(frozen=True)
class WarmupSample:
    name: str
    count: int
    requests: tuple[_SampleRequest, ...]


def warmup_samples(config: mc.ModelConfig, model_path: Path) -> list[WarmupSample]:
    """The configuration's samples with their data, for one instance; raises TritonError
    with Triton's message for a sample that cannot be built (an unset data kind, a
    variable-size dimension, a missing or short file, inputs the model refuses)."""
    samples = []
    for setting in config.model_warmup:
        if setting.batch_size == 0:
            log.debug("Skipping batch 0 warmup sample '%s'", setting.name)
            continue
        log.debug("Generating warmup sample data for '%s'", setting.name)
        inputs = [_sample_input(config, model_path, name, value)
                  for name, value in setting.inputs.items()]
        requests = tuple(_checked(config, inputs) for _ in range(setting.batch_size))
        samples.append(WarmupSample(setting.name, max(setting.count, 1), requests))
    return samples


def _sample_input(config: mc.ModelConfig, model_path: Path, name: str,
                  value: mc.ModelWarmup.Input) -> Tensor:
    """One input of a sample, shaped as one request of batch 1 would send it."""
    count = element_count(value.dims)
    if any(d < 0 for d in value.dims):
        raise TritonError.invalid_arg(
            "warmup setting expects all variable-size dimensions are specified for input "
            f"'{name}'"
        )
    datatype = wire_datatype(value.data_type)
    shape = ((1,) if config.max_batch_size > 0 else ()) + tuple(value.dims)
    kind = value.WhichOneof("input_data_type")
    if kind is None:
        raise TritonError.invalid_arg(
            f"{_PREFIX}warmup setting expects input '{name}' to have input_data_type set"
        )
    if datatype == "BYTES":
        if kind == "input_data_file":
            data = _read(model_path, value.input_data_file)
        else:  # zero and random data alike: empty elements (4 zero length bytes each)
            data = bytes(4 * count)
        flat = bytes_from_wire(data, count, name, config.name, _PREFIX)
        return Tensor(name, datatype, shape, flat.reshape(shape))
    dtype = numpy_dtype(datatype)
    size = count * dtype.itemsize
    if kind == "zero_data":
        array = np.zeros(shape, dtype=dtype)
    elif kind == "random_data":
        raw = np.random.default_rng().integers(0, 256, size, dtype=np.uint8)
        array = (raw != 0) if datatype == "BOOL" else raw.view(dtype)
        array = array.reshape(shape)
    else:
        data = _read(model_path, value.input_data_file)
        if len(data) < size:
            raise TritonError.invalid_arg(
                f"{_PREFIX}warmup setting expects {size} bytes, but the data provided from "
                f"{value.input_data_file}only has {len(data)} bytes"
            )
        array = np.frombuffer(data[:size], dtype=dtype).reshape(shape)
    return Tensor(name, datatype, shape, array)


def _read(model_path: Path, file_name: str) -> bytes:
    path = model_path / WARMUP_DATA_FOLDER / file_name
    try:
        return path.read_bytes()
    except OSError as exc:
        raise TritonError.internal(
            f"failed to open text file for read {path}: {exc.strerror}"
        ) from None


def _checked(config: mc.ModelConfig, inputs: Sequence[Tensor]) -> _SampleRequest:
    """A request of the sample, checked as any request (its configured inputs), with the
    others (sequence controls) added after the check."""
    declared = {i.name for i in config.input}
    request = InferenceRequest(config.name, inputs={
        t.name: _fresh(t) for t in inputs if t.name in declared})
    normalize_request(request, config)
    overrides = [t for t in inputs if t.name not in declared]
    return _SampleRequest(tuple(request.inputs.values()) + tuple(overrides), request.batch_size)


def _fresh(tensor: Tensor) -> Tensor:
    """A tensor of its own sharing the data (a backend may reshape its inputs)."""
    return Tensor(tensor.name, tensor.datatype, tensor.shape, tensor.data)


def warm_up(samples: Sequence[WarmupSample], model: str, version: int, instance: str,
            execute: Callable[[Sequence[InferenceRequest]], None],
            statistics: ModelStatistics) -> None:
    """Run each sample `count` times on one instance through `execute`, waiting for every
    request's final response (a decoupled model's may come after execute returns); raises
    TritonError (INVALID_ARG, Triton's message) at the first sample answered with an error."""
    for sample in samples:
        for iteration in range(1, sample.count + 1):
            log.debug("model '%s' instance %s is running warmup sample '%s' for iteration %d",
                      model, instance, sample.name, iteration)
            errors = _run_once(sample, model, version, execute, statistics)
            if errors:
                log.debug("model '%s' instance %s failed to run warmup sample '%s'",
                          model, instance, sample.name)
                raise TritonError.invalid_arg(
                    f"failed to run warmup sample '{sample.name}': "
                    + "".join(f"{error}; " for error in errors)
                )


def _run_once(sample: WarmupSample, model: str, version: int,
              execute: Callable[[Sequence[InferenceRequest]], None],
              statistics: ModelStatistics) -> list[str]:
    """One iteration of `sample`: the messages of the error responses, in order of arrival."""
    errors: list[str] = []
    done: list[threading.Event] = []
    requests = []
    for spec in sample.requests:
        request = InferenceRequest(model, version, inputs={t.name: _fresh(t) for t in spec.inputs})
        request.batch_size = spec.batch_size
        finished = threading.Event()
        request.response_sender = ResponseSender(_collector(request, errors, finished, statistics))
        request.queue_start_ns = perf_counter_ns()
        requests.append(request)
        done.append(finished)
    execute(requests)
    for finished in done:
        finished.wait()
    return errors


def _collector(request: InferenceRequest, errors: list[str], finished: threading.Event,
               statistics: ModelStatistics) -> Callable[[InferenceResponse | None, int], None]:
    """Where a warmup request's responses go: errors kept, outputs dropped, the request
    counted in the statistics once its final response is sent."""
    failed: list[TritonError] = []

    def deliver(response: InferenceResponse | None, flags: int) -> None:
        if response is not None and response.error is not None:
            failed.append(response.error)
            errors.append(response.error.message)
        if flags & RESPONSE_COMPLETE_FINAL:
            statistics.record_request(
                request, not failed, failure_reason(request, failed[0]) if failed else "OTHER")
            finished.set()

    return deliver
