"""Tritium's ``tritonserver``: Triton's in-process Python API, importable by its own name.

Code written for Triton's in-process API (``import tritonserver``; ``tritonserver.Server``,
``Options``, ``Model``, ``InferenceRequest``, ``Tensor``, the error classes ...) runs unmodified
on Tritium, as ``triton_python_backend_utils`` does for model files. Everything lives in
``tritium.inprocess``; this package only re-exports it.
"""

from tritium import __version__ as __version__
from tritium.inprocess import *  # noqa: F403  (the whole API, by design; __all__ below)
from tritium.inprocess import __all__

from . import _api as _api  # Triton's module paths (tritonserver._api._response, ...)

# Tracebacks name the errors as Triton's do: tritonserver.InvalidArgumentError.
for _name in __all__:
    _value = globals()[_name]
    if isinstance(_value, type) and issubclass(_value, BaseException):
        _value.__module__ = "tritonserver"
del _name, _value
