"""Request and response ``parameters``: checked as Triton checks them, kept as JSON (what
``parameters()`` returns and what the stub sends)."""

from __future__ import annotations

import json

from .errors import TritonModelException


def _parameters_json(parameters) -> str:
    """Triton's check and JSON form of request/response ``parameters`` (None means {})."""
    if parameters is None:
        return "{}"  # most responses: skips json.dumps, which costs microseconds each
    if not isinstance(parameters, dict):
        # Triton's words, including the C++ type name of py::dict.
        raise TritonModelException(f"Expect N8pybind114dictE, got {type(parameters)}")
    for key, value in parameters.items():
        if not isinstance(key, str):
            raise TritonModelException(
                f"Expect parameters keys to have type str, found type {type(key)}"
            )
        if not isinstance(value, (bool, int, str)):
            raise TritonModelException(
                f"Expect parameters values to have type bool/int/str, found type {type(value)}"
            )
    return json.dumps(parameters)
