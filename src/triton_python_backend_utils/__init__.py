"""Tritium's ``triton_python_backend_utils``: the package Triton Python-backend models import.

Unmodified ``model.py`` files do ``import triton_python_backend_utils as pb_utils``. This package
gives them Triton 2.51's surface: the helpers of Triton's own resource file (BYTES
(de)serialisation, dtype maps, config lookups, ``ModelConfig`` for auto-complete, flag
constants) and the classes Triton's stub exposes through pybind (``Tensor``, ``TritonError``,
``TritonModelException``, ``InferenceRequest``, ``InferenceResponse``,
``InferenceResponseSender``, ``Logger``, ``MetricFamily``, ``PreferredMemory``, model
loading), with Triton's names, defaults and error messages. Everything is used through this
package's top level; the modules behind it are one concept each.

Everything that needs the server goes through one runtime object that the stub process
installs (``runtime.py``); this package never does I/O itself.

Stub-facing API (leading underscore; not part of Triton's API):

* ``_set_runtime(runtime, model_dir=None)`` installs the ``_Runtime`` and the model version
  directory that ``get_model_dir()`` returns.
* ``InferenceRequest._from_server(...)`` builds the requests handed to ``execute``.
* ``InferenceResponseSender._update_state(response, flags)``, ``._is_closed()`` and
  ``._close()``, and ``InferenceResponse._prune_output_tensors(names)``, let the stub treat
  responses returned from ``execute`` the way Triton does.
* ``Tensor._on_device(name, DeviceTensor)`` wraps GPU memory (a BLS input mapped by CUDA IPC);
  ``Tensor._host_array()`` is a tensor's host memory (a GPU tensor's copied once, for the wire).
* The stub may read these attributes directly (their names are part of this contract):
  ``Tensor._name/_dtype/_array/_device`` (``_array`` is None for a GPU tensor);
  ``InferenceResponse._output_tensors/_error/_parameters``;
  ``InferenceRequest._inputs/_request_id/_correlation_id/_flags/_timeout/_parameters/
  _requested_output_names/_model_name/_model_version/_preferred_memory/_release_flags``
  (``_release_flags`` holds what the model passed to ``set_release_flags``).
"""

from __future__ import annotations

from .constants import (
    TRITONSERVER_MEMORY_CPU,
    TRITONSERVER_MEMORY_GPU,
    TRITONSERVER_REQUEST_FLAG_SEQUENCE_END,
    TRITONSERVER_REQUEST_FLAG_SEQUENCE_START,
    TRITONSERVER_REQUEST_RELEASE_ALL,
    TRITONSERVER_REQUEST_RELEASE_RESCHEDULE,
    TRITONSERVER_RESPONSE_COMPLETE_FINAL,
)
from .dtypes import (
    TRITON_STRING_TO_NUMPY,
    numpy_to_triton_type,
    triton_string_to_numpy,
    triton_to_numpy_type,
)
from .errors import TritonError, TritonModelException
from .logger import Logger
from .metrics import Metric, MetricFamily
from .model_config import (
    ModelConfig,
    get_input_config_by_name,
    get_output_config_by_name,
    using_decoupled_model_transaction_policy,
)
from .model_control import is_model_ready, load_model, unload_model
from .request import InferenceRequest, InferenceTrace, PreferredMemory, get_input_tensor_by_name
from .response import InferenceResponse, get_output_tensor_by_name
from .response_sender import InferenceResponseSender
from .runtime import _Runtime as _Runtime  # _*: the stub's API, see above
from .runtime import _set_runtime as _set_runtime
from .runtime import get_model_dir
from .serialization import deserialize_bytes_tensor, serialize_byte_tensor
from .tensor import Tensor

__all__ = [
    "TRITONSERVER_MEMORY_CPU",
    "TRITONSERVER_MEMORY_GPU",
    "TRITONSERVER_REQUEST_FLAG_SEQUENCE_END",
    "TRITONSERVER_REQUEST_FLAG_SEQUENCE_START",
    "TRITONSERVER_REQUEST_RELEASE_ALL",
    "TRITONSERVER_REQUEST_RELEASE_RESCHEDULE",
    "TRITONSERVER_RESPONSE_COMPLETE_FINAL",
    "TRITON_STRING_TO_NUMPY",
    "InferenceRequest",
    "InferenceResponse",
    "InferenceResponseSender",
    "InferenceTrace",
    "Logger",
    "Metric",
    "MetricFamily",
    "ModelConfig",
    "PreferredMemory",
    "Tensor",
    "TritonError",
    "TritonModelException",
    "deserialize_bytes_tensor",
    "get_input_config_by_name",
    "get_input_tensor_by_name",
    "get_model_dir",
    "get_output_config_by_name",
    "get_output_tensor_by_name",
    "is_model_ready",
    "load_model",
    "numpy_to_triton_type",
    "serialize_byte_tensor",
    "triton_string_to_numpy",
    "triton_to_numpy_type",
    "unload_model",
    "using_decoupled_model_transaction_policy",
]

# The classes show under the module Triton defines them in (in reprs, and in the type names
# Triton's error messages quote, e.g. "found type '<class 'c_python_backend_utils.Tensor'>'"),
# wherever in the package they are defined: the stub's pybind11 module `c_python_backend_utils`
# for the classes the stub provides, this package for its own ModelConfig.
for _class in (InferenceRequest, InferenceResponse, InferenceResponseSender, InferenceTrace,
               Logger, Metric, MetricFamily, PreferredMemory, Tensor, TritonError,
               TritonModelException):
    _class.__module__ = "c_python_backend_utils"
del _class
ModelConfig.__module__ = __name__
