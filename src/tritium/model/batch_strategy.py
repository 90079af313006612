"""Which custom batching strategy library a model uses, found as Triton's TritonModel::Create
finds it, and loaded for the model's dynamic batcher (scheduler/batch_strategy.BatchStrategy).

The model's `TRITON_BATCH_STRATEGY_PATH` parameter names the library, inside the model's folder
or a backend directory (config/model_paths; a relative path is taken from the model's folder), a
missing file failing the load NOT_FOUND; without it, the first `batchstrategy.so` in the version
directory, the model directory, then the backend's directory under each --backend-directory. A
sequence batcher takes no strategy (the parameter fails the load INVALID_ARG). The library itself
is compiled Triton code, opened through Tritium's libtritonserver.so
(backend/native/batch_strategy.py), imported only when a model has one.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Protocol

from ..backend.handles import Model
from ..config.model_paths import BATCH_STRATEGY_PARAMETER, batch_strategy_path
from ..errors import TritonError
from ..scheduler.batch_strategy import BatchStrategy

log = logging.getLogger("tritium.model")

PATH_PARAMETER = BATCH_STRATEGY_PARAMETER
LIBRARY_NAME = "batchstrategy.so"


class LoadedStrategy(BatchStrategy, Protocol):
    """A strategy the model holds: the batcher's calls, and ModelBatcherFinalize at unload."""

    def close(self) -> None: ...


def strategy_library(model: Model, backend_directories: list[Path]) -> Path | None:
    """The strategy library `model` names or has beside it (None: it batches as usual)."""
    config = model.config
    if PATH_PARAMETER in config.parameters:
        if config.HasField("sequence_batching"):
            raise TritonError.invalid_arg(
                f"{PATH_PARAMETER} cannot be specified with sequence batcher, using default "
                "batching strategy")
        path = batch_strategy_path(config.parameters[PATH_PARAMETER].string_value,
                                   model.repository_path)
        if not path.is_file():
            raise TritonError.not_found(f"Batching library path not found: {path}")
        return path
    if config.HasField("sequence_batching"):
        return None
    folders = [model.repository_path / str(model.version), model.repository_path]
    folders += [directory / model.backend.name for directory in backend_directories]
    for folder in folders:
        candidate = folder / LIBRARY_NAME
        if candidate.is_file():
            return candidate
    return None


def load_batch_strategy(model: Model, backend_directories: list[Path]) -> LoadedStrategy | None:
    """The model's strategy, its batcher initialized (a failure fails the load with the
    strategy's code and message); None when it has none, or its library defines no strategy."""
    path = strategy_library(model, backend_directories)
    if path is None:
        return None
    log.info("Loading custom batching strategy library %s for model %s", path, model.name)
    from ..backend.native.batch_strategy import NativeBatchStrategy

    return NativeBatchStrategy.open(path, model)
