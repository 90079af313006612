"""One Execute batch: the server's requests in, TRITONBACKEND_ModelInstanceExecute, responses out.

Triton's core does this in C++ (backend_model_instance.cc hands the batch to Execute; the
responses come back through its response factories). Tritium's requests and responses are
Python objects, so each batch is converted both ways. Two runners do the same steps:

- the hot path (`csrc/python/hotpath.cc`), a CPython extension compiled next to
  libtritonserver.so: one call per batch builds the TRITONBACKEND_Requests, runs Execute with
  the GIL released, and turns the responses Execute sent into InferenceResponses whose arrays
  wrap the outputs' buffers (no copy). What is rare (BYTES outputs, response parameters, error
  responses) it hands back to the Python functions given to `setup`;
- ctypes: a dozen foreign calls per request and per response. It runs where the extension
  cannot be built (no Python headers), or when `TRITIUM_NATIVE_HOTPATH=0` asks for it.

A runner's `execute` returns the TRITONSERVER_Error* Execute returned (0: none, owned by the
caller), the `PendingRequest` of every request, and its TRITONBACKEND_Request* (the server's
again when Execute failed). The server's log names the runner chosen.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import logging
import os
import threading
from collections.abc import Sequence
from ctypes import POINTER, c_uint32, c_uint64, c_void_p
from typing import Any, Protocol, cast

import numpy as np

from ...errors import TritonError
from ...request import InferenceRequest, InferenceResponse
from ...tensor import Tensor, serialize_bytes
from . import build
from .host import deliver_response
from .library import TOKEN_COUNTER, TOKENS, Library, new_token
from .requests import PendingRequest, build_request, read_response

log = logging.getLogger("tritium.backend.native")

HOTPATH_ENV = "TRITIUM_NATIVE_HOTPATH"


class BatchRunner(Protocol):
    def execute(self, execute: int, instance: int, model: str, queue: bool,
                requests: Sequence[InferenceRequest], all_outputs: list[bytes]
                ) -> tuple[int, list[PendingRequest], list[int]]: ...

    def forget_finished(self) -> None: ...


class CtypesRunner:
    """The batch through ctypes calls (see the module docstring)."""

    def __init__(self, lib: Library) -> None:
        self.lib = lib

    def execute(self, execute: int, instance: int, model: str, queue: bool,
                requests: Sequence[InferenceRequest], all_outputs: list[bytes]
                ) -> tuple[int, list[PendingRequest], list[int]]:
        pendings: list[PendingRequest] = []
        handles: list[int] = []
        for request in requests:
            pending = PendingRequest(request, model)
            pendings.append(pending)
            handles.append(build_request(self.lib, instance, new_token(pending), pending,
                                         all_outputs))
        array = (c_void_p * len(handles))(*handles)
        error = self.lib.tritium_execute(execute, instance, array, len(handles), int(queue))
        self._deliver_queued()
        self.lib.forget_finished()
        return error or 0, pendings, handles

    def forget_finished(self) -> None:
        self.lib.forget_finished()

    def _deliver_queued(self) -> None:
        """The responses Execute sent from its own thread (see tritium_execute)."""
        count = self.lib.tritium_queued_count()
        if not count:
            return
        token, handle, flags = c_uint64(), c_void_p(), c_uint32()
        error, stamps = c_void_p(), POINTER(c_uint64)()
        try:
            for index in range(count):
                self.lib.tritium_queued(index, token, handle, flags, error, stamps)
                try:
                    deliver_response(self.lib, token.value, handle.value, flags.value,
                                     error.value, stamps)
                except TritonError:  # e.g. the client's request was already answered
                    log.debug("a queued response could not be delivered", exc_info=True)
        finally:
            self.lib.tritium_queued_clear()


def _load_hotpath(lib: Library) -> BatchRunner:
    """The extension, built if needed and given what it calls in Python."""
    path = build.hotpath_path()
    name = f"{__package__}._hotpath"
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    if spec is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)

    def bytes_input(tensor: Tensor) -> bytes:
        return serialize_bytes(np.asarray(tensor.data))

    def read(handle: int, model: str) -> InferenceResponse:
        try:
            return read_response(lib, handle, model)
        except TritonError as exc:  # a malformed output fails this response, as in Triton
            return InferenceResponse(error=exc)

    def deliver(token: int, handle: int, flags: int, error: int, stamps: Any) -> None:
        try:
            deliver_response(lib, token, handle or None, flags, error or None, stamps)
        except TritonError:  # e.g. the client's request was already answered
            log.debug("a queued response could not be delivered", exc_info=True)

    module.setup(TOKENS, TOKEN_COUNTER, PendingRequest, Tensor, InferenceResponse,
                 np.ascontiguousarray, bytes_input, read, deliver, TritonError)
    log.info("native backends: Execute batches through the hot path (%s)", path)
    return cast(BatchRunner, module)


_runner: BatchRunner | None = None
_lock = threading.Lock()


def runner(lib: Library) -> BatchRunner:
    """The process's batch runner: the hot path when it can be built, else ctypes."""
    global _runner
    with _lock:
        if _runner is None:
            if os.environ.get(HOTPATH_ENV, "1") == "0":
                log.info("native backends: Execute batches through ctypes (%s=0)", HOTPATH_ENV)
                _runner = CtypesRunner(lib)
            else:
                try:
                    _runner = _load_hotpath(lib)
                except (TritonError, ImportError, OSError) as exc:
                    log.warning("native backends: Execute batches through ctypes, slower: %s",
                                exc)
                    _runner = CtypesRunner(lib)
        return _runner
