"""Model and ModelInstance: a loaded model version and its execution instances."""

from .instance import ModelInstance
from .model import Model
from .statistics import ModelStatistics, StatisticsSnapshot

__all__ = ["Model", "ModelInstance", "ModelStatistics", "StatisticsSnapshot"]
