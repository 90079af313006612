"""The loaded libtritonserver.so: ctypes prototypes, errors both ways, and the host table.

The library is opened RTLD_GLOBAL once per process, before any backend, so a backend's
DT_NEEDED `libtritonserver.so` resolves to it. `install_host` hands the library its callbacks
into Python (ctypes callbacks take the GIL; ctypes calls into the library release it, so a
backend thread calling back while an instance thread is inside Execute does not deadlock).
Callbacks find their Python objects by token in `TOKENS`.
"""

from __future__ import annotations

import ctypes
import importlib
import itertools
import logging
import os
from collections.abc import Callable
from ctypes import (
    CFUNCTYPE,
    POINTER,
    c_char_p,
    c_double,
    c_int,
    c_int64,
    c_uint32,
    c_uint64,
    c_void_p,
)
from typing import TYPE_CHECKING, Any

from ...errors import Code, TritonError
from . import build

log = logging.getLogger("tritium.backend.native")

# TRITONSERVER_Error_Code <-> Tritium's codes.
_CODES = [Code.UNKNOWN, Code.INTERNAL, Code.NOT_FOUND, Code.INVALID_ARG, Code.UNAVAILABLE,
          Code.UNSUPPORTED, Code.ALREADY_EXISTS, Code.CANCELLED]
_CODE_NUMBERS = {code: number for number, code in enumerate(_CODES)}

# Python objects the library refers to by token: pending requests, models, instances.
TOKENS: dict[int, Any] = {}
TOKEN_COUNTER = itertools.count(1)


def new_token(obj: Any) -> int:
    token = next(TOKEN_COUNTER)
    TOKENS[token] = obj
    return token


HOST_FIELDS = [
    ("response", CFUNCTYPE(c_void_p, c_uint64, c_void_p, c_uint32, c_void_p, POINTER(c_uint64))),
    ("release", CFUNCTYPE(c_void_p, c_uint64, c_uint32)),
    ("is_cancelled", CFUNCTYPE(c_int, c_uint64)),
    ("log", CFUNCTYPE(None, c_int, c_char_p, c_int, c_char_p)),
    ("log_enabled", CFUNCTYPE(c_int, c_int)),
    ("model_config", CFUNCTYPE(c_void_p, c_uint64, POINTER(c_void_p))),
    ("model_set_config", CFUNCTYPE(c_void_p, c_uint64, c_char_p)),
    ("statistics", CFUNCTYPE(None, c_uint64, c_uint64, c_int, POINTER(c_uint64))),
    ("batch_statistics", CFUNCTYPE(None, c_uint64, c_uint64, POINTER(c_uint64))),
    ("response_statistics", CFUNCTYPE(c_void_p, c_uint64, c_uint64, c_void_p,
                                      POINTER(c_uint64))),
    ("state_update", CFUNCTYPE(c_void_p, c_uint64, c_void_p)),
    ("server_call", CFUNCTYPE(c_void_p, c_int, c_char_p, c_int64, c_char_p, POINTER(c_int64),
                              POINTER(c_void_p))),
    ("infer_async", CFUNCTYPE(c_void_p, c_void_p)),
    ("metric_call", CFUNCTYPE(c_void_p, c_int, c_uint64, c_int, c_char_p, c_char_p, c_double,
                              POINTER(c_double), c_uint64, POINTER(c_uint64), POINTER(c_double))),
    ("request_gone", CFUNCTYPE(None, c_uint64, c_int)),
    ("memory_usage", CFUNCTYPE(c_void_p, c_uint64, c_uint32, POINTER(c_int), POINTER(c_int64),
                               POINTER(c_uint64))),
    ("server_object", CFUNCTYPE(c_void_p, c_int, c_char_p, c_int64, c_char_p, POINTER(c_int64),
                                POINTER(c_void_p))),
    ("output_properties", CFUNCTYPE(c_void_p, c_uint64, c_char_p, POINTER(ctypes.c_size_t),
                                    POINTER(c_int), POINTER(c_int64))),
]


class _Host(ctypes.Structure):
    _fields_ = [(name, kind) for name, kind in HOST_FIELDS]


class OutputInfo(ctypes.Structure):
    """One output of a TRITONBACKEND_Response (tritium_response_outputs)."""

    _fields_ = [("name", c_char_p), ("datatype", ctypes.c_int32), ("dims", c_uint32),
                ("shape", POINTER(c_int64)), ("buffer", c_void_p), ("byte_size", c_uint64),
                ("preferred_type", ctypes.c_int32), ("preferred_id", c_int64)]


P = c_void_p
_PROTOTYPES: dict[str, tuple[Any, list[Any]]] = {
    "TRITONSERVER_ErrorNew": (P, [c_int, c_char_p]),
    "TRITONSERVER_ErrorDelete": (None, [P]),
    "TRITONSERVER_ErrorCode": (c_int, [P]),
    "TRITONSERVER_ErrorMessage": (c_char_p, [P]),
    "TRITONSERVER_MessageNewFromSerializedJson": (P, [POINTER(P), c_char_p, ctypes.c_size_t]),
    "TRITONSERVER_MessageSerializeToJson": (P, [P, POINTER(c_char_p), POINTER(ctypes.c_size_t)]),
    "TRITONSERVER_MessageDelete": (P, [P]),
    "tritium_set_host": (None, [POINTER(_Host)]),
    "tritium_backend_new": (P, [c_uint64, c_char_p, c_char_p, c_char_p]),
    "tritium_backend_delete": (None, [P]),
    "tritium_backend_policy": (c_int, [P]),
    "tritium_model_new": (P, [c_uint64, P, c_char_p, c_uint64, c_char_p, c_int]),
    "tritium_model_add_state": (None, [P, c_char_p, c_char_p, c_int]),
    "tritium_model_delete": (None, [P]),
    "tritium_instance_new": (P, [c_uint64, P, c_char_p, c_int, ctypes.c_int32, c_int,
                                    c_char_p]),
    "tritium_instance_add_profile": (None, [P, c_char_p]),
    "tritium_instance_delete": (None, [P]),
    "tritium_attribute_new": (P, []),
    "tritium_attribute_group_count": (c_uint32, [P]),
    "tritium_attribute_group": (None, [P, c_uint32, POINTER(c_int), POINTER(c_uint64)]),
    "tritium_attribute_parallel": (c_int, [P]),
    "tritium_attribute_delete": (None, [P]),
    "tritium_request_new": (P, [P, c_uint64, c_char_p, c_uint64, c_char_p, c_uint32, c_uint64]),
    "tritium_request_add_input": (None, [P, c_char_p, c_int, POINTER(c_int64), c_uint32, P,
                                         c_uint64]),
    "tritium_request_add_output": (None, [P, c_char_p]),
    "tritium_request_add_parameter": (None, [P, c_char_p, c_int, c_char_p, c_int64, c_double]),
    "tritium_request_delete": (None, [P]),
    "tritium_drain_finished": (ctypes.c_size_t, [POINTER(c_uint64), ctypes.c_size_t]),
    "tritium_response_outputs": (c_uint32, [P, POINTER(OutputInfo), c_uint32]),
    "tritium_response_parameter_count": (c_uint32, [P]),
    "tritium_response_parameter": (None, [P, c_uint32, POINTER(c_char_p), POINTER(c_int),
                                          POINTER(c_char_p), POINTER(c_int64),
                                          POINTER(c_double)]),
    "tritium_state_read": (None, [P, POINTER(c_char_p), POINTER(c_int),
                                  POINTER(POINTER(c_int64)), POINTER(c_uint32), POINTER(P),
                                  POINTER(c_uint64)]),
    "tritium_sreq_info": (None, [P, POINTER(c_char_p), POINTER(c_int64), POINTER(c_char_p),
                                 POINTER(c_uint32), POINTER(c_uint64), POINTER(c_char_p),
                                 POINTER(c_uint64), POINTER(c_uint64), POINTER(c_uint32),
                                 POINTER(c_uint32), POINTER(c_uint32)]),
    "tritium_sreq_input": (None, [P, c_uint32, POINTER(c_char_p), POINTER(c_int),
                                  POINTER(POINTER(c_int64)), POINTER(c_uint32),
                                  POINTER(c_uint64)]),
    "tritium_sreq_input_copy": (P, [P, c_uint32, P]),
    "tritium_sreq_output": (c_char_p, [P, c_uint32]),
    "tritium_sreq_raw_input": (c_char_p, [P]),
    "tritium_sreq_parameter": (None, [P, c_uint32, POINTER(c_char_p), POINTER(c_int),
                                      POINTER(c_char_p), POINTER(c_int64), POINTER(c_double)]),
    "tritium_sresp_new": (P, [P, c_char_p, c_int64, c_char_p, c_int, c_char_p]),
    "tritium_sresp_add_output": (P, [P, P, c_char_p, c_int, POINTER(c_int64), c_uint32, P,
                                     c_uint64, c_int, c_int64]),
    "tritium_sresp_add_parameter": (None, [P, c_char_p, c_int, c_char_p, c_int64, c_double]),
    "tritium_execute": (P, [P, P, POINTER(P), c_uint32, c_int]),
    "tritium_queued_count": (c_uint32, []),
    "tritium_queued": (None, [c_uint32, POINTER(c_uint64), POINTER(P), POINTER(c_uint32),
                              POINTER(P), POINTER(POINTER(c_uint64))]),
    "tritium_queued_clear": (None, []),
    "tritium_sreq_complete": (None, [P, P, c_uint32]),
    "tritium_sreq_query": (P, [P, c_char_p, POINTER(ctypes.c_size_t), POINTER(c_int),
                               POINTER(c_int64)]),
    "tritium_set_cuda_runtime": (None, [c_char_p]),
}


# Functions that run backend code (Execute, a BLS caller's allocator and callbacks) or may
# block: called with the GIL released. Every other one is a short C accessor, called with the
# GIL held, so building a request or reading a response costs no GIL hand-off per call.
_RELEASE_GIL = frozenset({
    "tritium_execute", "tritium_set_host", "tritium_sresp_new", "tritium_sresp_add_output",
    "tritium_sreq_complete", "tritium_sreq_query",
})


def _cuda_runtime_path() -> str | None:
    """Where cuda-python's pathfinder finds libcudart (NVIDIA's wheels, conda, the toolkit).

    The library opens the CUDA runtime only when a backend asks for GPU memory, and then
    tries this path before the dynamic loader's own search, which misses the runtime pip's
    CUDA wheels put in site-packages. Without cuda-python (the `cuda` extra) there is none.
    """
    try:
        pathfinder = importlib.import_module("cuda.pathfinder")
    except ImportError:
        return None
    try:
        found = pathfinder.load_nvidia_dynamic_lib("cudart")
    except Exception as exc:  # noqa: BLE001 - any failure leaves the loader's search
        log.debug("cuda-python's pathfinder found no CUDA runtime: %s", exc)
        return None
    path = getattr(found, "abs_path", None)
    return path if isinstance(path, str) else None


class Library:
    """libtritonserver.so, opened once, with typed functions as attributes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.dll = ctypes.CDLL(path, mode=os.RTLD_NOW | ctypes.RTLD_GLOBAL)
        held = ctypes.PyDLL(path, mode=os.RTLD_NOW | ctypes.RTLD_GLOBAL)  # the same library
        for name, (restype, argtypes) in _PROTOTYPES.items():
            function = getattr(self.dll if name in _RELEASE_GIL else held, name)
            function.restype = restype
            function.argtypes = argtypes
            setattr(self, name, function)
        self._aliases: dict[str, ctypes.CDLL] = {}
        self._host: _Host | None = None
        runtime = _cuda_runtime_path()
        if runtime is not None:
            self.tritium_set_cuda_runtime(runtime.encode())

    def released(self, prototypes: dict[str, tuple[Any, list[Any]]]) -> dict[str, Any]:
        """More of the library's functions, typed by `prototypes` and called without the GIL:
        those that run code loaded beside the library (an agent, a batching strategy), which
        may call back into Python."""
        functions = {}
        for name, (restype, argtypes) in prototypes.items():
            function = getattr(self.dll, name)
            function.restype = restype
            function.argtypes = argtypes
            functions[name] = function
        return functions

    if TYPE_CHECKING:
        def __getattr__(self, name: str) -> Any:
            """The ctypes functions of `_PROTOTYPES`, set as attributes in __init__."""

    def install_host(self, callbacks: dict[str, Callable[..., Any]]) -> None:
        host = _Host(**{name: kind(callbacks[name]) for name, kind in HOST_FIELDS})
        self._host = host  # kept alive: the library calls these for the process's lifetime
        self.tritium_set_host(ctypes.byref(host))

    def forget_finished(self) -> None:
        """Drop the requests the library has finished with (answered, every handle gone)."""
        buffer = (c_uint64 * 256)()
        while True:
            count = self.tritium_drain_finished(buffer, 256)
            for token in buffer[:count]:
                TOKENS.pop(token, None)
            if count < 256:
                return

    def load_alias(self, soname: str) -> None:
        """Make `soname` (a backend's name for the server library) resolve to this one."""
        if soname in self._aliases:
            return
        path = build.alias_path(soname)
        self._aliases[soname] = ctypes.CDLL(str(path), mode=os.RTLD_NOW | ctypes.RTLD_GLOBAL)

    # ---- errors ----
    def take_error(self, pointer: int | None) -> TritonError | None:
        """A TRITONSERVER_Error* the caller owns -> TritonError (and delete it)."""
        if not pointer:
            return None
        error = self.read_error(pointer)
        self.TRITONSERVER_ErrorDelete(pointer)
        return error

    def read_error(self, pointer: int) -> TritonError:
        number = self.TRITONSERVER_ErrorCode(pointer)
        message = (self.TRITONSERVER_ErrorMessage(pointer) or b"").decode("utf-8", "replace")
        code = _CODES[number] if 0 <= number < len(_CODES) else Code.INTERNAL
        return TritonError(code, message)

    def new_error(self, error: BaseException) -> int:
        """A TRITONSERVER_Error* for the library to own."""
        if isinstance(error, TritonError):
            number, message = _CODE_NUMBERS.get(error.code, 1), error.message
        else:
            number, message = 1, f"{type(error).__name__}: {error}"
        return self.TRITONSERVER_ErrorNew(number, message.encode("utf-8", "replace"))

    def new_message(self, text: str) -> int:
        data = text.encode("utf-8")
        out = c_void_p()
        self.TRITONSERVER_MessageNewFromSerializedJson(ctypes.byref(out), data, len(data))
        return out.value or 0
