"""Model and ModelInstance: a loaded model version and its execution instances."""

from .instance import ModelInstance
from .model import Model, ModelRetired
from .statistics import ModelStatistics, StatisticsSnapshot

__all__ = ["Model", "ModelInstance", "ModelRetired", "ModelStatistics", "StatisticsSnapshot"]
