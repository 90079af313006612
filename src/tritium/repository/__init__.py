"""The model repository (what exists on disk) and the model life cycle (what is loaded).

`scanner` (RepositoryScanner: the repositories' model directories, configurations and
versions), `ready_state` (ModelReadyState, VersionStatus), `lifecycle` (ModelLifeCycle:
loading and unloading versions) with `version_states` (VersionStates: each version's state)
and `model_factory` (ModelFactory: it makes a TritonModel or an EnsembleModel),
`model_repository_manager` (ModelRepositoryManager, as Triton's: control modes, load/unload
requests, polling, the index) with `model_info` (PolledModel: a model read for a load),
`load_by_dependency` (DependencyLoader: composing models first), `dependency_graph`,
`load_overrides` and `poller`;
`control_queue` (ModelControlQueue: load/unload requests run one at a time per model);
`repo_agents` (the repository agents a model's configuration names); `cloud` (repositories
on S3, GCS and Azure storage, localized).
"""

from .cloud import repository_location
from .control_queue import ModelControlQueue
from .lifecycle import ModelLifeCycle
from .model_repository_manager import ModelRepositoryManager
from .poller import RepositoryPoller
from .ready_state import ModelReadyState, VersionStatus
from .repo_agents import DEFAULT_REPOAGENT_DIRECTORY
from .scanner import ModelSource, RepositoryScan, RepositoryScanner

__all__ = [
    "DEFAULT_REPOAGENT_DIRECTORY",
    "ModelControlQueue",
    "ModelLifeCycle",
    "ModelReadyState",
    "ModelRepositoryManager",
    "ModelSource",
    "RepositoryPoller",
    "RepositoryScan",
    "RepositoryScanner",
    "VersionStatus",
    "repository_location",
]
