"""``tritonserver._api._model``: the model handle and its property flags."""

from tritium.inprocess.enums import ModelBatchFlag, ModelTxnPropertyFlag
from tritium.inprocess.model import Model

__all__ = ["Model", "ModelBatchFlag", "ModelTxnPropertyFlag"]
