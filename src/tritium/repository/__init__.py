"""The model repository (what exists on disk) and the model life cycle (what is loaded)."""

from .lifecycle import ModelLifeCycle, ModelReadyState, VersionStatus
from .manager import ModelRepositoryManager, ModelSource, RepositoryScan

__all__ = [
    "ModelLifeCycle",
    "ModelReadyState",
    "ModelRepositoryManager",
    "ModelSource",
    "RepositoryScan",
    "VersionStatus",
]
