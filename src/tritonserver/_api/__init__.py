"""Triton's module paths inside ``tritonserver`` (``tritonserver._api._response`` ...).

Triton defines its API's classes in these private modules and re-exports them; code written for
it reaches them by path too (Triton's OpenAI frontend annotates with
``tritonserver._api._response.InferenceResponse``, evaluated when its module is imported). Each
module here names the ``tritium.inprocess`` classes Triton defines in the module of that name.
"""

from . import _allocators, _dlpack, _memorybuffer, _model, _request, _response, _server, _tensor

__all__ = ["_allocators", "_dlpack", "_memorybuffer", "_model", "_request", "_response",
           "_server", "_tensor"]
