"""A custom batching strategy library (Triton's TRITONBACKEND_ModelBatch* API) for one model.

`csrc/batch_strategy.cc` opens the library and calls its five functions; this module is the
Python handle the dynamic batcher consults (the scheduler's `BatchStrategy` protocol). The
strategy reads the model (TRITONBACKEND_ModelConfig...) and the requests it is asked about
(TRITONBACKEND_RequestInput...), so it is given C handles for them: a compiled backend's model
handle as it is; for a model of Tritium's own backends, a lightweight model handle made for the
strategy, and for every request asked about, a TRITONBACKEND_Request pointing at the request's
tensors, freed once the strategy has answered. Models without a strategy make none of these.
"""

from __future__ import annotations

import ctypes
import logging
from ctypes import POINTER, c_char_p, c_int, c_void_p
from pathlib import Path
from typing import Any

from ...request import InferenceRequest
from ..handles import Model
from .backend import NativeModel
from .host import library
from .library import TOKENS
from .requests import PendingRequest, build_request

log = logging.getLogger("tritium.backend.native")

_PROTOTYPES: dict[str, tuple[Any, list[Any]]] = {
    "tritium_strategy_open": (c_void_p, [c_char_p, c_char_p, c_void_p, POINTER(c_void_p)]),
    "tritium_strategy_batch_begin": (c_void_p, [c_void_p, POINTER(c_void_p)]),
    "tritium_strategy_include": (c_void_p, [c_void_p, c_void_p, c_void_p, POINTER(c_int)]),
    "tritium_strategy_batch_end": (c_void_p, [c_void_p, c_void_p]),
    "tritium_strategy_close": (c_void_p, [c_void_p]),
}



class _StrategyModel:
    """The TRITONBACKEND_Model the strategy is given: the compiled backend's own, or one made
    for a model of Tritium's own backends (with a backend handle of its own to point at)."""

    def __init__(self, model: Model) -> None:
        self._lib = library()
        self._owned: NativeModel | None = None
        self._backend = 0
        if isinstance(model.state, NativeModel):
            self.handle: int = model.state.handle
            return
        backend = model.backend
        location = str(backend.directory) if backend.directory is not None else ""
        self._backend = self._lib.tritium_backend_new(
            0, backend.name.encode(), location.encode(), backend.config_json().encode())
        owned = self._owned = NativeModel(model)
        owned.handle = self._lib.tritium_model_new(
            owned.token, self._backend, model.name.encode(), model.version,
            str(model.repository_path).encode(), int(model.auto_complete))
        self.handle = owned.handle

    def close(self) -> None:
        if self._owned is not None:
            TOKENS.pop(self._owned.token, None)
            self._lib.tritium_model_delete(self._owned.handle)
            self._lib.tritium_backend_delete(self._backend)
            self._owned = None


class NativeBatchStrategy:
    """The strategy at `path`, its batcher made for `model` (ModelBatcherInitialize).

    Use `open`: a library that defines none of the functions is no strategy (None), as in
    Triton; one that defines only some, or whose ModelBatcherInitialize fails, raises
    TritonError with Triton's (or the strategy's) code and message.
    """

    def __init__(self, handle: int, model: _StrategyModel, name: str,
                 output_names: list[bytes]) -> None:
        self._lib = library()
        self._call = library().released(_PROTOTYPES)
        self._handle: int | None = handle
        self._model = model
        self._name = name
        self._outputs = output_names

    @classmethod
    def open(cls, path: Path, model: Model) -> NativeBatchStrategy | None:
        lib = library()
        call = library().released(_PROTOTYPES)
        strategy_model = _StrategyModel(model)
        handle = c_void_p()
        error = lib.take_error(call["tritium_strategy_open"](
            str(path).encode(), model.name.encode(), strategy_model.handle,
            ctypes.byref(handle)))
        if error is not None or not handle.value:
            strategy_model.close()
            if error is not None:
                raise error
            return None
        outputs = [o.name.encode() for o in model.config.output]
        return cls(handle.value, strategy_model, model.name, outputs)

    def _logged(self, what: str, pointer: int | None) -> None:
        """Triton logs a failing strategy call and goes on batching."""
        error = self._lib.take_error(pointer)
        if error is not None:
            log.error("Custom batching %s function failed for model %s: %s", what, self._name,
                      error.message)

    def begin(self) -> int:
        """ModelBatchInitialize: a batch is being formed; its user pointer."""
        assert self._handle is not None
        userp = c_void_p()
        self._logged("initialization",
                     self._call["tritium_strategy_batch_begin"](self._handle, ctypes.byref(userp)))
        return userp.value or 0

    def include(self, batch: int, request: InferenceRequest) -> bool:
        """ModelBatchIncludeRequest: whether the batch being formed takes `request`."""
        assert self._handle is not None
        pending = PendingRequest(request, self._name)  # keeps the input buffers alive
        handle = build_request(self._lib, 0, 0, pending, self._outputs)  # no instance yet
        include = c_int()
        try:
            self._logged("include", self._call["tritium_strategy_include"](
                self._handle, handle, batch, ctypes.byref(include)))
        finally:
            self._lib.tritium_request_delete(handle)
        return bool(include.value)

    def end(self, batch: int) -> None:
        """ModelBatchFinalize: the batch is formed."""
        if self._handle is not None and batch:
            self._logged("finalization",
                         self._call["tritium_strategy_batch_end"](self._handle, batch))

    def close(self) -> None:
        """ModelBatcherFinalize (the model is unloading), then the library is closed."""
        if self._handle is None:
            return
        handle, self._handle = self._handle, None
        error = self._lib.take_error(self._call["tritium_strategy_close"](handle))
        self._model.close()
        if error is not None:
            log.error("Custom batcher finalization failed for model %s: %s", self._name,
                      error.message)

