"""EnsembleModel: a loaded `platform: "ensemble"` model (Triton's EnsembleModel).

It has no backend and no instances: its scheduler runs each request as a data flow of
requests to the composing models. Loading checks the ensemble against the composing models'
final configurations (Triton's ValidateEnsembleConfig, run when an ensemble's dependencies have
loaded) and marks it decoupled when a step is. Requests, statistics and unloading are the
ordinary model's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tritonclient.grpc import model_config_pb2 as mc

from ..backend.handles import ExecutionPolicy
from ..config import validate_ensemble_steps, validate_model_io_config
from ..errors import TritonError
from ..repository import ModelReadyState
from ..scheduler import create_scheduler
from .labels import read_labels
from .model import TritonModel
from .statistics import ModelStatistics

if TYPE_CHECKING:
    from ..server import InferenceServer

@dataclass
class _EnsembleHandle:
    """What a TritonModel reads from its backend handle; an ensemble has no backend."""

    name: str
    version: int
    config: mc.ModelConfig
    repository_path: Path


class EnsembleModel(TritonModel):
    @classmethod
    def load_ensemble(
        cls, config: mc.ModelConfig, version: int, model_path: Path, server: InferenceServer
    ) -> "EnsembleModel":
        ensemble = mc.ModelConfig()
        ensemble.CopyFrom(config)
        validate_model_io_config(ensemble)
        composing = _composing_configs(ensemble, server)
        decoupled = validate_ensemble_steps(ensemble, composing)
        ensemble.model_transaction_policy.decoupled = decoupled
        handle = _EnsembleHandle(ensemble.name, version, ensemble, model_path)
        statistics = ModelStatistics(ensemble.name, str(version))
        model = cls(server.backends, None, handle, statistics)  # type: ignore[arg-type]
        model.labels = read_labels(ensemble, model_path)
        model.scheduler = create_scheduler(
            ensemble, [], ExecutionPolicy.BLOCKING, server=server, statistics=statistics
        )
        model.scheduler.start()
        return model

    def _teardown(self) -> None:
        if self.scheduler is not None:
            self.scheduler.stop()
            self.scheduler = None


def _composing_configs(
    config: mc.ModelConfig, server: InferenceServer
) -> dict[str, mc.ModelConfig]:
    """Each step model's final configuration (the model control loads composing models before
    their ensembles); a step model that is not ready makes the ensemble fail to load, in Triton's
    words."""
    names = sorted({step.model_name for step in config.ensemble_scheduling.step})
    states = server.lifecycle.status()
    missing = [name for name in names if name not in states]
    if missing:
        raise TritonError.invalid_arg(
            f"ensemble {config.name} contains models that are not available or ambiguous: "
            + ", ".join(missing)
        )
    configs: dict[str, mc.ModelConfig] = {}
    for step in config.ensemble_scheduling.step:
        name, version = step.model_name, step.model_version
        versions = states[name]
        if not any(s.state is ModelReadyState.READY for s in versions.values()):
            failures = "".join(
                f"version {v} is at {s.state.value} state: {s.reason};"
                for v, s in sorted(versions.items())
            )
            raise TritonError.invalid_arg(
                f"ensemble '{config.name}' depends on '{name}' which has no loaded version. "
                f"Model '{name}' loading failed with error: {failures}"
            )
        try:
            configs[name] = server.lifecycle.get(name, version).config
        except TritonError:
            raise TritonError.invalid_arg(
                f"ensemble '{config.name}' depends on '{name}' whose required version "
                f"{version} is not loaded"
            ) from None
    return configs

