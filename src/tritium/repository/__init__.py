"""The model repository (what exists on disk) and the model life cycle (what is loaded)."""

from .lifecycle import ModelLifeCycle, ModelReadyState, VersionStatus
from .manager import ModelRepositoryManager, ModelSource, RepositoryScan
from .model_control import ModelControl
from .poller import RepositoryPoller

__all__ = [
    "ModelControl",
    "ModelLifeCycle",
    "ModelReadyState",
    "ModelRepositoryManager",
    "ModelSource",
    "RepositoryPoller",
    "RepositoryScan",
    "VersionStatus",
]
