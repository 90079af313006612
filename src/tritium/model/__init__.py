"""The server's models: TritonModel (one loaded model version) and TritonModelInstance (one
execution instance), Triton core's classes of those names; EnsembleModel; statistics; labels;
request normalisation. (Backends see them through the handles of `tritium.backend`.)"""

from .instance import TritonModelInstance
from .model import ModelRetired, TritonModel
from .statistics import ModelStatistics, StatisticsSnapshot

__all__ = [
    "ModelRetired", "ModelStatistics", "StatisticsSnapshot", "TritonModel", "TritonModelInstance",
]
