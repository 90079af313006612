"""Making one model version (Triton's ModelLifeCycle::CreateModel and UpdateModelConfig).

As Triton's life cycle picks TritonModel::Create or EnsembleModel::Create, this picks
TritonModel (a backend's model) or EnsembleModel, to which it hands the composing models'
configurations; it retries a failed load `--model-load-retry-count` times, and updates a
serving version's instance groups in place. A version that cannot be made comes back as the
reason, in Triton's words, never as an exception: the life cycle decides what the load then
does. Its own module because making a version is one thing the life cycle asks for, on its
loading threads, and apart from the states it keeps (version_states.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from tritonclient.grpc import model_config_pb2 as mc

from ..backend.manager import BackendManager
from ..config import ENSEMBLE_PLATFORM
from ..errors import Code, TritonError
from ..latency_summary import LatencySummaries
from ..model import EnsembleModel, LoadedModel, TritonModel
from ..response_cache import ResponseCache
from ..scheduler import EnsembleServer
from ..scheduler.rate_limiter import RateLimiter
from .ready_state import ModelReadyState, VersionStatus
from .scanner import ModelSource, RepositoryScanner, model_identifier
from .version_states import VersionStates

log = logging.getLogger("tritium.repository")


@dataclass(frozen=True)
class ModelFactory:
    """Makes the versions of models, with the server's backends, cache and rate limiter."""

    repository: RepositoryScanner
    backends: BackendManager
    # Where an ensemble finds its composing models (loaded before it).
    states: VersionStates
    response_cache: ResponseCache | None
    rate_limiter: RateLimiter | None
    # What ensembles route their steps through (None: no ensemble can load).
    server: EnsembleServer | None
    load_retry_count: int  # --model-load-retry-count
    # --metrics-config summary_latencies=true: each loaded version keeps latency summaries.
    summary_quantiles: tuple[tuple[float, float], ...] | None

    def update(
        self, status: VersionStatus, config: mc.ModelConfig, name: str
    ) -> LoadedModel | str:
        """Triton's UpdateModelConfig: the serving version with `config`'s instance groups, or
        the reason it could not take them (it serves on as it was)."""
        model = status.model
        assert isinstance(model, TritonModel)
        log.info("loading: %s:%d", name, status.version)
        try:
            model.update_instance_groups(config)
        except Exception as exc:
            reason = exc.message if isinstance(exc, TritonError) else f"{type(exc).__name__}: {exc}"
            log.error("failed to update '%s' version %d: %s", name, status.version, reason)
            return reason
        return model

    def create(
        self, source: ModelSource, config: mc.ModelConfig, version: int,
        config_provided: bool = True,
    ) -> LoadedModel | str:
        """The loaded version, or the reason it failed (after --model-load-retry-count more
        tries). Logged as Triton logs it: "loading: <model>:<version>", and on failure "failed
        to load '<model>' version <version>: <Code>: <reason>"."""
        log.info("loading: %s:%d", source.key, version)
        for attempt in range(self.load_retry_count + 1):
            result = self._try_create(source, config, version, config_provided)
            if isinstance(result, LoadedModel):
                return result
            if attempt < self.load_retry_count:
                log.info("retrying to load model '%s' version %d", source.key, version)
        return result

    def _try_create(
        self, source: ModelSource, config: mc.ModelConfig, version: int,
        config_provided: bool,
    ) -> LoadedModel | str:
        try:
            model: LoadedModel
            if config.platform == ENSEMBLE_PLATFORM:
                model = self._create_ensemble(config, version, source)
            else:
                model = TritonModel.load(
                    config,
                    version,
                    source.path,
                    self.backends,
                    auto_complete=self.repository.auto_complete,
                    config_provided=config_provided,
                    gpus=self.repository.gpus,
                    response_cache=self.response_cache,
                    rate_limiter=self.rate_limiter,
                )
        except Exception as exc:
            if isinstance(exc, TritonError):
                reason, code = str(exc), exc.code
            else:
                reason, code = f"{type(exc).__name__}: {exc}", Code.INTERNAL
            log.error("failed to load '%s' version %d: %s: %s", source.key, version,
                      code.status_text, reason)
            return reason
        if self.summary_quantiles is not None:
            model.statistics.summaries = LatencySummaries(self.summary_quantiles)
        model.statistics.namespace = source.namespace
        return model

    def _create_ensemble(
        self, config: mc.ModelConfig, version: int, source: ModelSource
    ) -> EnsembleModel:
        if self.server is None:
            raise TritonError.internal(f"ensemble '{config.name}' needs a server to run on")
        model = EnsembleModel.load_ensemble(
            config, version, source.path, self._composing_configs, self.server,
            self.response_cache,
        )
        # An output without labels of its own classifies with those of the step output that
        # writes it, as Triton's life cycle gives them to a new ensemble.
        unlabeled = {output.name for output in config.output if not model.labels.get(output.name)}
        for step in config.ensemble_scheduling.step:
            for step_output, tensor in step.output_map.items():
                if tensor in unlabeled:
                    labels = self.states.get(_step_key(step),
                                              step.model_version).labels.get(step_output)
                    if labels:
                        model.labels[tensor] = labels
        return model

    def _composing_configs(self, config: mc.ModelConfig) -> dict[str, mc.ModelConfig]:
        """Each step model's final configuration (the model repository manager loads composing
        models before their ensembles); a step model that is not ready makes the ensemble fail
        to load, in Triton's words."""
        keys = {step.model_name: _step_key(step) for step in config.ensemble_scheduling.step}
        states = self.states.status()
        missing = [name for name, key in sorted(keys.items()) if key not in states]
        if missing:
            raise TritonError.invalid_arg(
                f"ensemble {config.name} contains models that are not available or ambiguous: "
                + ", ".join(missing)
            )
        configs: dict[str, mc.ModelConfig] = {}
        for step in config.ensemble_scheduling.step:
            name, version = step.model_name, step.model_version
            versions = states[keys[name]]
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
                configs[name] = self.states.get(keys[name], version).config
            except TritonError:
                raise TritonError.invalid_arg(
                    f"ensemble '{config.name}' depends on '{name}' whose required version "
                    f"{version} is not loaded"
                ) from None
        return configs


def _step_key(step: mc.ModelEnsembling.Step) -> str:
    """The identifier of the model an ensemble step runs (its namespace is set only with
    namespacing)."""
    return model_identifier(step.model_namespace, step.model_name)
