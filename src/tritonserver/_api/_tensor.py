"""``tritonserver._api._tensor``: the tensor and its data types."""

from tritium.inprocess.enums import DataType
from tritium.inprocess.tensor import Tensor

__all__ = ["DataType", "Tensor"]
