"""EnsembleModel: a loaded `platform: "ensemble"` model (Triton's EnsembleModel).

It has no backend and no instances: its scheduler runs each request as a data flow of
requests to the composing models, through the server (`EnsembleServer`, the two calls it
needs). Loading checks the ensemble against the composing models' final configurations
(Triton's ValidateEnsembleConfig, run once an ensemble's dependencies have loaded: the life
cycle hands them over) and marks it decoupled when a step is. Requests, statistics and
unloading are every loaded model's (`loaded_model.LoadedModel`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tritonclient.grpc import model_config_pb2 as mc

from ..config import validate_ensemble_steps, validate_model_io_config, validate_response_cache
from ..errors import TritonError
from ..request import InferenceRequest
from ..response_cache import ResponseCache
from ..scheduler import EnsembleScheduler, EnsembleServer
from ..statistics import ModelStatistics
from .labels import read_labels
from .loaded_model import LoadedModel


class EnsembleModel(LoadedModel):
    traces_compute = False

    def __init__(
        self, config: mc.ModelConfig, version: int, model_path: Path, statistics: ModelStatistics
    ) -> None:
        super().__init__(config.name, version, model_path, statistics)
        self._config = config

    @property
    def config(self) -> mc.ModelConfig:
        return self._config

    def failure_reason(self, request: InferenceRequest, error: TritonError | None) -> str:
        """OTHER, whatever failed: Triton's ensemble scheduler reports every failed ensemble
        request so (its steps count their own reasons)."""
        return "OTHER"

    @classmethod
    def load_ensemble(
        cls,
        config: mc.ModelConfig,
        version: int,
        model_path: Path,
        composing_configs: Callable[[mc.ModelConfig], dict[str, mc.ModelConfig]],
        server: EnsembleServer,
        response_cache: ResponseCache | None = None,
    ) -> EnsembleModel:
        """Triton's EnsembleModel::Create. `composing_configs(config)`: each step model's final
        configuration, from the life cycle (TritonError when a step model is not ready). An
        ensemble that enables the response cache answers a request it has answered before
        from the cache, its steps not run, as Triton's ensemble scheduler does."""
        ensemble = mc.ModelConfig()
        ensemble.CopyFrom(config)
        validate_model_io_config(ensemble)
        decoupled = validate_ensemble_steps(ensemble, composing_configs(ensemble))
        ensemble.model_transaction_policy.decoupled = decoupled
        validate_response_cache(ensemble)
        statistics = ModelStatistics(ensemble.name, str(version))
        model = cls(ensemble, version, model_path, statistics)
        model.use_response_cache(response_cache)
        model.labels = read_labels(ensemble, model_path)
        model.scheduler = EnsembleScheduler(ensemble, server, statistics)
        model.scheduler.start()
        return model
