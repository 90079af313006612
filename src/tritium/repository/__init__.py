"""The model repository (what exists on disk) and the model life cycle (what is loaded).

`scanner` (RepositoryScanner: the repositories' model directories, configurations and
versions), `lifecycle` (ModelLifeCycle: loading, unloading and the ready states of versions),
`model_repository_manager` (ModelRepositoryManager, as Triton's: control modes, load/unload
requests, polling, the index) with `dependency_graph`, `load_overrides` and `poller`."""

from .lifecycle import ModelLifeCycle, ModelReadyState, VersionStatus
from .model_repository_manager import ModelRepositoryManager
from .poller import RepositoryPoller
from .scanner import ModelSource, RepositoryScan, RepositoryScanner

__all__ = [
    "ModelLifeCycle",
    "ModelReadyState",
    "ModelRepositoryManager",
    "ModelSource",
    "RepositoryPoller",
    "RepositoryScan",
    "RepositoryScanner",
    "VersionStatus",
]
