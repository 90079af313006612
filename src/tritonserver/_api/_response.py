"""``tritonserver._api._response``: the inference response and the response iterators."""

from tritium.inprocess.response import AsyncResponseIterator, InferenceResponse, ResponseIterator

__all__ = ["AsyncResponseIterator", "InferenceResponse", "ResponseIterator"]
