"""What one load of a model starts from (Triton's ModelInfo) and how it is read from the
repository (Triton's InitializeModelInfo and ConnectDependencyGraph).

A model's configuration is read (its file's, or a load request's), its repository agents
run their LOAD first (they may move the files), it is completed for where the files are, and
its ensemble steps are linked to the models they run, which the dependency graph then holds.
Start-up, polls, load requests and an ensemble's composing models all read a model this way;
they differ only in what a model that cannot be read becomes: a poll leaves it as it was and
logs why, a load request shows it UNAVAILABLE with the reason. Its own module because the
repository manager (which models, when) and the dependency loader (in which order) both read
models, and neither owns how.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path

from tritonclient.grpc import model_config_pb2 as mc

from ..errors import TritonError
from .dependency_graph import DependencyGraph, composing_models
from .lifecycle import ModelLifeCycle
from .repo_agents import RepoAgentModels
from .scanner import ModelSource, RepositoryScan, RepositoryScanner

log = logging.getLogger("tritium.repository")


@dataclass
class PolledModel:
    """What one load of a model starts from (Triton's ModelInfo): its completed
    configuration, where its files are (the last repository agent's location, if it has
    agents) and its agents, which the load takes over."""

    config: mc.ModelConfig
    source: ModelSource
    agents: RepoAgentModels | None = None
    # Whether a configuration file (or a load request's) gave the configuration.
    config_provided: bool = True
    # The identifiers its ensemble steps' models are linked to (DependencyGraph.set).
    links: list[str] = field(default_factory=list)

    def abandon(self) -> None:
        """The load never started: the agents hear that it failed."""
        if self.agents is not None:
            self.agents.load_failed()


@dataclass(frozen=True)
class ModelInfoReader:
    """Reads models of the repositories into PolledModels, noting their edges in `graph`;
    a model that cannot load is shown UNAVAILABLE through `lifecycle`."""

    repository: RepositoryScanner
    lifecycle: ModelLifeCycle
    graph: DependencyGraph
    repoagent_directory: Path

    def for_load(self, scan: RepositoryScan, source: ModelSource) -> PolledModel | None:
        """The configuration a load request's model needs, or None after recording why it
        cannot load (the model shows UNAVAILABLE with the reason)."""
        try:
            return self.read(scan, source)
        except TritonError as exc:
            self.record_error(source, exc.message)
            return None

    def for_poll(self, scan: RepositoryScan, source: ModelSource) -> PolledModel | None:
        """The configuration of a model found at start-up or by a poll, or None: the model
        stays as it was (unknown if new) and only the log says why, in Triton's words."""
        try:
            return self.read(scan, source)
        except TritonError as exc:
            log.error("Poll failed for model directory '%s': %s", source.name, exc.message)
            return None

    def read(self, scan: RepositoryScan, source: ModelSource,
             override: mc.ModelConfig | None = None) -> PolledModel:
        """The model's configuration (its file's, or a load request's `override`), noted in
        the dependency graph, after its repository agents' LOAD (they may move the files),
        completed for where the files are; TritonError if it cannot be read, an agent
        refuses, or it does not normalise or validate."""
        agents = None
        provided = override is not None or self.repository.has_config_file(source)
        try:
            config = self.repository.read_config(source) if override is None else override
            if config.HasField("model_repository_agents"):
                agents = RepoAgentModels.start(config, source.path,
                                               self.repoagent_directory,
                                               self.repository.config_name)
                source = replace(source, path=agents.location)
            config = self.repository.complete_config(config, source)
        except BaseException as exc:
            if agents is not None:
                agents.load_failed()
            if isinstance(exc, Exception) and not isinstance(exc, TritonError):
                raise TritonError.invalid_arg(f"{type(exc).__name__}: {exc}") from exc
            raise
        links = self._link(scan, source, config)
        self.graph.set(source.key, config, links)
        return PolledModel(config, source, agents, provided, links)

    def _link(self, scan: RepositoryScan, source: ModelSource, config: mc.ModelConfig
              ) -> list[str]:
        """Triton's ConnectDependencyGraph for the model at `source`: the identifier each model
        its ensemble steps name (composing_models) is linked to. With namespacing each step's
        `model_namespace` is set to the linked model's, which its requests then go to."""
        if self.repository.namespacing:
            for step in config.ensemble_scheduling.step:
                found = scan.composing_source(source.namespace, step.model_name)
                step.model_namespace = found.namespace if found is not None else ""
        return self.link_steps(scan, source, composing_models(config))

    def link_steps(self, scan: RepositoryScan, source: ModelSource, steps: list[str]
                   ) -> list[str]:
        """The identifier each step model name links to (the bare name when none does)."""
        if not self.repository.namespacing:
            return list(steps)
        found = [scan.composing_source(source.namespace, name) for name in steps]
        return [name if f is None else f.key for name, f in zip(steps, found, strict=True)]

    def record_error(self, source: ModelSource, reason: str) -> None:
        """A load request's model that cannot be read: logged, and shown UNAVAILABLE with
        `reason` (with the versions its folder holds)."""
        log.error("Poll failed for model directory '%s': %s", source.name, reason)
        versions = self.repository.available_versions(source) if source.path.is_dir() else []
        self.lifecycle.mark_unavailable(source.key, reason, versions,
                                        model_name=source.name)
