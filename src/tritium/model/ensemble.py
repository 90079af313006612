"""EnsembleModel: a loaded `platform: "ensemble"` model (Triton's EnsembleModel).

It has no backend and no instances: its scheduler runs each request as a data flow of
requests to the composing models. Loading checks the ensemble against the composing models'
final configurations (Triton's ValidateEnsembleConfig, run when an ensemble's dependencies have
loaded) and marks it decoupled when a step is. Requests, statistics and unloading are the
ordinary model's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tritonclient.grpc import model_config_pb2 as mc

from ..backend.handles import ExecutionPolicy
from ..config import validate_ensemble_steps, validate_model_io_config
from ..errors import TritonError
from ..repository import ModelReadyState, VersionStatus
from ..scheduler import create_scheduler
from .model import Model
from .statistics import ModelStatistics

if TYPE_CHECKING:
    from ..server import InferenceServer

# How long a loading ensemble waits for composing models that are still loading. Triton loads
# an ensemble after its composing models; when every model loads at once (control mode none),
# the ensemble waits for them here instead.
COMPOSING_LOAD_WAIT_S = 120.0


@dataclass
class _EnsembleHandle:
    """What a Model reads from its backend handle; an ensemble has no backend."""

    name: str
    version: int
    config: mc.ModelConfig
    repository_path: Path


class EnsembleModel(Model):
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
    """Each step model's final configuration, once the models being loaded have settled; a step
    model that is not ready makes the ensemble fail to load, in Triton's words."""
    names = sorted({step.model_name for step in config.ensemble_scheduling.step})
    coming = _models_to_come(server)
    deadline = time.monotonic() + COMPOSING_LOAD_WAIT_S
    while time.monotonic() < deadline:
        states = server.lifecycle.status()
        if not any(_settling(states.get(name), name in coming) for name in names):
            break
        time.sleep(0.02)
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


def _models_to_come(server: InferenceServer) -> set[str]:
    """The models that will load without being asked: every one in the repositories when the
    control mode is none (they all load at startup, concurrently)."""
    if server.options.model_control_mode != "none":
        return set()
    return set(server.repository.scan().models)


def _settling(versions: dict[int, VersionStatus] | None, coming: bool) -> bool:
    if versions is None:
        return coming
    return any(s.state is ModelReadyState.LOADING for s in versions.values())
