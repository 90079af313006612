"""``tritonserver._api._request``: the inference request."""

from tritium.inprocess.request import InferenceRequest

__all__ = ["InferenceRequest"]
