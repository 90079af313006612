"""A compiled Triton backend (`libtriton_<name>.so`) as a Tritium backend implementation.

Triton opens a backend library with dlopen and finds its TRITONBACKEND_* entry points with
dlsym; `NativeBackend` does the same (ctypes), after making sure the library's DT_NEEDED
server library resolves to Tritium's libtritonserver.so. Its methods are Tritium's entry
points (`initialize`, `model_initialize`, ..., `model_instance_execute`), so BackendManager,
the life cycle, the schedulers and the frontends treat it like any other backend. The C
handles it creates live in the `state` slots of Tritium's Backend/Model/ModelInstance handles.

Execute: the batch runner (`batch`) turns the server's requests into TRITONBACKEND_Request
objects pointing at the request tensors, runs TRITONBACKEND_ModelInstanceExecute with the GIL
released, and delivers the responses it sent. If Execute returns an error, the requests are
still the server's: they get that error. For a model that is not decoupled, requests the
backend released but has not answered yet are waited for before execute returns (their answer
comes from a backend thread); a request the backend neither released nor answered gets
Tritium's "returned from execute without sending a response".
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
from collections.abc import Sequence
from ctypes import POINTER, c_int, c_uint32, c_uint64, c_void_p
from pathlib import Path
from typing import Any

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

from ...errors import TritonError
from ...request import InferenceRequest
from ...statistics import MemoryUsage
from ..api import BackendAttributes
from ..handles import Backend, ExecutionPolicy, Model, ModelInstance
from . import server_calls
from .batch import BatchRunner, runner
from .host import library
from .library import TOKENS, Library, new_token

log = logging.getLogger("tritium.backend.native")

_ENTRY_POINTS = {
    "TRITONBACKEND_Initialize": [c_void_p],
    "TRITONBACKEND_Finalize": [c_void_p],
    "TRITONBACKEND_GetBackendAttribute": [c_void_p, c_void_p],
    "TRITONBACKEND_ModelInitialize": [c_void_p],
    "TRITONBACKEND_ModelFinalize": [c_void_p],
    "TRITONBACKEND_ModelInstanceInitialize": [c_void_p],
    "TRITONBACKEND_ModelInstanceFinalize": [c_void_p],
    "TRITONBACKEND_ModelInstanceExecute": [c_void_p, POINTER(c_void_p), c_uint32],
}
_KINDS = {"KIND_AUTO": 0, "KIND_CPU": 1, "KIND_GPU": 2, "KIND_MODEL": 3}
_KIND_NAMES = {number: name for name, number in _KINDS.items()}


def server_library_names(path: Path) -> list[str]:
    """The DT_NEEDED entries of `path` that name Triton's server library."""
    with open(path, "rb") as handle:
        elf = ELFFile(handle)
        needed: list[str] = []
        for section in elf.iter_sections():
            if isinstance(section, DynamicSection):
                needed += [tag.needed  # type: ignore[attr-defined]  # set per tag kind
                           for tag in section.iter_tags()
                           if tag.entry.d_tag == "DT_NEEDED"]
    return [name for name in needed if name.startswith("libtritonserver")]


class NativeModel:
    """The C model handle, and what its config callbacks reach."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.name = model.name
        self.decoupled = model.config.model_transaction_policy.decoupled
        self.token = new_token(self)
        self.handle: int = 0
        self.output_names: list[bytes] = []

    def config_json(self) -> str:
        return self.model.config_json()

    def set_config_json(self, text: str) -> None:
        self.model.set_config_json(text)

    def report_memory_usage(self, usage: list[MemoryUsage]) -> None:
        self.model.report_memory_usage(usage)


class NativeInstance:
    def __init__(self, model: NativeModel, handle: int, token: int) -> None:
        self.model = model
        self.handle = handle
        self.token = token


class NativeBackend:
    """The entry points of one compiled backend library."""

    # Triton's core counts a compiled backend's requests and executions only from what it
    # reports (TRITONBACKEND_ModelInstanceReport{,Batch}Statistics): so does Tritium.
    REPORTS_STATISTICS = True
    # Triton's core leaves the "backend configuration:" record to the backend (identity logs
    # it at INFO): the server logs none for it.
    LOGS_CONFIGURATION = True

    def __init__(self, name: str, path: Path) -> None:
        self.name = name
        self.path = path
        self.lib: Library = library()
        self.batch: BatchRunner = runner(self.lib)
        try:
            needed = server_library_names(path)
        except (ELFError, OSError) as exc:
            raise TritonError.invalid_arg(
                f"unable to load backend library '{path}': {exc}") from exc
        for soname in needed:
            if soname != "libtritonserver.so":
                self.lib.load_alias(soname)
        try:
            self.dll = ctypes.CDLL(str(path), mode=os.RTLD_NOW | os.RTLD_LOCAL)
        except OSError as exc:
            raise TritonError.invalid_arg(
                f"unable to load backend library '{path}': {exc}") from exc
        self._entry: dict[str, Any] = {}
        for symbol, argtypes in _ENTRY_POINTS.items():
            function = getattr(self.dll, symbol, None)
            if function is not None:
                function.restype = c_void_p
                function.argtypes = argtypes
            self._entry[symbol] = function
        if self._entry["TRITONBACKEND_ModelInstanceExecute"] is None:
            raise TritonError.invalid_arg(
                f"backend '{name}' ({path}) does not define TRITONBACKEND_ModelInstanceExecute")
        # Called by the batch runner through tritium_execute, which holds back this thread's
        # responses until Execute returns.
        self._execute_address: int = ctypes.cast(
            self._entry["TRITONBACKEND_ModelInstanceExecute"], c_void_p).value or 0

    def _call(self, symbol: str, *args: Any) -> None:
        function = self._entry[symbol]
        if function is None:
            return
        error = self.lib.take_error(function(*args))
        if error is not None:
            raise error

    # ---- backend ----
    def initialize(self, backend: Backend) -> None:
        # Server calls (TRITONSERVER_MetricFamilyNew...) work from TRITONBACKEND_Initialize on.
        server_calls.attach(backend.server)
        location = str(self.path.parent)
        handle = self.lib.tritium_backend_new(
            0, self.name.encode(), location.encode(), backend.config_json().encode())
        backend.state = handle
        try:
            self._call("TRITONBACKEND_Initialize", handle)
        except TritonError:
            self.lib.tritium_backend_delete(handle)
            backend.state = None
            raise
        if self.lib.tritium_backend_policy(handle) == 1:
            backend.execution_policy = ExecutionPolicy.DEVICE_BLOCKING

    def finalize(self, backend: Backend) -> None:
        try:
            self._call("TRITONBACKEND_Finalize", backend.state)
        finally:
            self.lib.tritium_backend_delete(backend.state)

    def get_backend_attribute(self, backend: Backend, attributes: BackendAttributes) -> None:
        handle = self.lib.tritium_attribute_new()
        try:
            self._call("TRITONBACKEND_GetBackendAttribute", backend.state, handle)
            kind, count = c_int(), c_uint64()
            for index in range(self.lib.tritium_attribute_group_count(handle)):
                self.lib.tritium_attribute_group(handle, index, kind, count)
                attributes.add_preferred_instance_group(_KIND_NAMES[kind.value], count.value)
            attributes.set_parallel_model_instance_loading(
                bool(self.lib.tritium_attribute_parallel(handle)))
        finally:
            self.lib.tritium_attribute_delete(handle)

    # ---- model ----
    def model_initialize(self, model: Model) -> None:
        native = NativeModel(model)
        native.handle = self.lib.tritium_model_new(
            native.token, model.backend.state, model.name.encode(), model.version,
            str(model.repository_path).encode(), int(model.auto_complete))
        for state in model.config.sequence_batching.state:
            self.lib.tritium_model_add_state(native.handle, state.output_name.encode(),
                                             state.input_name.encode(),
                                             int(state.use_same_buffer_for_input_output))
        model.state = native
        try:
            self._call("TRITONBACKEND_ModelInitialize", native.handle)
        except TritonError:
            self._drop_model(model)
            raise
        native.decoupled = model.config.model_transaction_policy.decoupled

    def model_finalize(self, model: Model) -> None:
        if model.state is None:
            return
        try:
            self._call("TRITONBACKEND_ModelFinalize", model.state.handle)
        finally:
            self._drop_model(model)

    def _drop_model(self, model: Model) -> None:
        native: NativeModel = model.state
        TOKENS.pop(native.token, None)
        self.lib.tritium_model_delete(native.handle)
        model.state = None

    # ---- instance ----
    def model_instance_initialize(self, instance: ModelInstance) -> None:
        native_model: NativeModel = instance.model.state
        # The configuration is final (auto-completed, normalised) once instances are made.
        native_model.output_names = [o.name.encode() for o in instance.model.config.output]
        token = new_token(None)
        # Triton names an instance's host policy after its device unless the group names one.
        policy = instance.group.host_policy or (
            f"gpu_{instance.device_id}" if instance.kind == "KIND_GPU" else "cpu")
        handle = self.lib.tritium_instance_new(
            token, native_model.handle, instance.name.encode(), _KINDS.get(instance.kind, 1),
            instance.device_id, int(instance.is_passive), json.dumps({policy: {}}).encode())
        for profile in instance.group.profile:
            self.lib.tritium_instance_add_profile(handle, profile.encode())
        native = NativeInstance(native_model, handle, token)
        TOKENS[token] = instance  # what the statistics reports reach
        instance.state = native
        try:
            self._call("TRITONBACKEND_ModelInstanceInitialize", handle)
        except TritonError:
            self._drop_instance(instance)
            raise

    def model_instance_finalize(self, instance: ModelInstance) -> None:
        if instance.state is None:  # its initialize failed and was cleaned up then
            return
        try:
            self._call("TRITONBACKEND_ModelInstanceFinalize", instance.state.handle)
        finally:
            self._drop_instance(instance)
            self.batch.forget_finished()

    def _drop_instance(self, instance: ModelInstance) -> None:
        native: NativeInstance = instance.state
        TOKENS.pop(native.token, None)
        self.lib.tritium_instance_delete(native.handle)
        instance.state = None

    def model_instance_execute(
        self, instance: ModelInstance, requests: Sequence[InferenceRequest]
    ) -> None:
        native: NativeInstance = instance.state
        decoupled = native.model.decoupled
        error_pointer, pendings, handles = self.batch.execute(
            self._execute_address, native.handle, native.model.name, not decoupled, requests,
            native.model.output_names)
        error = self.lib.take_error(error_pointer)
        if error is not None:
            # Ownership stayed with the server: answer and free what was not released. Each
            # request answered so counts as a backend failure, as Triton's core counts it.
            for pending, handle in zip(pendings, handles, strict=True):
                if not pending.released:
                    if not pending.completed:
                        instance.report_statistics(pending.request, False, 0, 0, 0, 0)
                        pending.request.respond_error(error)
                    pending.released = True
                    self.lib.tritium_request_delete(handle)
            return
        if not decoupled:
            for pending in pendings:
                if pending.released and not pending.completed and not pending.rescheduled:
                    pending.wait()
