"""The server's models: one loaded model version and what executes it.

`loaded_model` (LoadedModel: one loaded version, taking requests until retired, Triton core's
Model; ResolvedModel: the version one request holds from lookup to submission), `model`
(TritonModel: a backend's model and its instances), `instance` (TritonModelInstance: runs the
backend's execute for one instance), `ensemble` (EnsembleModel), `labels` (classification
labels), `request_normalizer` (a request checked and completed against the configuration).
Backends see models and instances through the handles of `tritium.backend`, never these
classes.
"""

from ..statistics import ModelStatistics, StatisticsSnapshot
from .ensemble import EnsembleModel
from .instance import TritonModelInstance
from .loaded_model import LoadedModel, ModelRetired, ResolvedModel
from .model import TritonModel

__all__ = [
    "EnsembleModel",
    "LoadedModel",
    "ModelRetired",
    "ModelStatistics",
    "ResolvedModel",
    "StatisticsSnapshot",
    "TritonModel",
    "TritonModelInstance",
]
