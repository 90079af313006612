"""The handles a backend is given: Backend, Model, ModelInstance (TRITONBACKEND_* objects).

Each handle has a `state` slot the backend fills (TRITONBACKEND_*SetState) and the server never
reads. Handles expose what Triton's backend API exposes and nothing of the server's internals.
"""

from __future__ import annotations

import enum
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tritonclient.grpc import model_config_pb2 as mc

from ..config import model_config_from_json, model_config_to_json
from ..errors import Code, TritonError
from ..request import InferenceRequest
from ..statistics import (
    RESPONSE_CANCEL,
    RESPONSE_EMPTY,
    RESPONSE_FAIL,
    RESPONSE_SUCCESS,
    MemoryUsage,
    ModelStatistics,
)

if TYPE_CHECKING:
    from .server_api import ServerApi


class ExecutionPolicy(enum.Enum):
    """TRITONBACKEND_ExecutionPolicy: how instances map to execution threads.

    BLOCKING gives every instance its own thread; DEVICE_BLOCKING shares one thread among the
    instances on the same device, for backends whose instances contend for one device anyway.
    """

    BLOCKING = "BLOCKING"
    DEVICE_BLOCKING = "DEVICE_BLOCKING"


class Backend:
    """TRITONBACKEND_Backend: one per backend name, shared by every model that uses it."""

    def __init__(self, name: str, directory: Path | None, config: dict[str, str], *,
                 server: ServerApi) -> None:
        self.name = name
        # Where the backend was found (a --backend-directory entry), None when built in.
        self.directory = directory
        # Its command-line settings (TRITONBACKEND_BackendConfig's "cmdline"): the server's
        # and --backend-config's, resolved for this backend (backend/cmdline_config.py).
        self.config = dict(config)
        # The server it is loaded in. A Triton backend may call the server's API (a custom
        # metric family, say) from TRITONBACKEND_Initialize, before any model exists.
        self.server = server
        self.execution_policy = ExecutionPolicy.BLOCKING
        self.state: Any = None

    def config_json(self) -> str:
        """TRITONBACKEND_BackendConfig: `{"cmdline":{<setting>:<value>,...}}` (`{}` without
        settings), compact as Triton serializes it."""
        document = {"cmdline": self.config} if self.config else {}
        return json.dumps(document, separators=(",", ":"))


class Model:
    """TRITONBACKEND_Model: one loaded version of a model, as its backend sees it."""

    def __init__(
        self,
        backend: Backend,
        config: mc.ModelConfig,
        version: int,
        repository_path: Path,
        *,
        auto_complete: bool,
        server: ServerApi,
        statistics: ModelStatistics | None = None,
    ) -> None:
        self.backend = backend
        # TRITONBACKEND_ModelServer: the server, for requests the model makes itself (BLS).
        self.server = server
        self.name = config.name
        self.version = version
        self._config = config
        # The model's directory (TRITONBACKEND_ModelRepository); version files under str(version).
        self.repository_path = repository_path
        # TRITONBACKEND_ModelAutoCompleteConfig: may the backend fill in the configuration?
        self.auto_complete = auto_complete
        self._initializing = True
        self.config_set = False  # TRITONBACKEND_ModelSetConfig called
        self.state: Any = None
        # The version's statistics, which memory usage reports go to (None: no server's).
        self._statistics = statistics

    @property
    def config(self) -> mc.ModelConfig:
        return self._config

    def report_memory_usage(self, usage: list[MemoryUsage]) -> None:
        """TRITONBACKEND_ModelReportMemoryUsage: what the model itself holds, replacing its
        earlier report (its instances report their own)."""
        if self._statistics is not None:
            self._statistics.set_memory_usage("", usage)

    def config_json(self) -> str:
        """TRITONBACKEND_ModelConfig: the configuration as Triton's JSON text."""
        return json.dumps(model_config_to_json(self._config))

    def set_config_json(self, text: str) -> None:
        """TRITONBACKEND_ModelSetConfig from Triton's JSON form (what auto-complete returns)."""
        self.set_config(model_config_from_json(text))

    @property
    def version_path(self) -> Path:
        return self.repository_path / str(self.version)

    def set_config(self, config: mc.ModelConfig) -> None:
        """TRITONBACKEND_ModelSetConfig: replace the configuration during model_initialize.

        The server normalises and validates the new configuration before creating instances.
        """
        if not self._initializing:
            raise TritonError.unsupported(
                "model configuration can only be set during model initialization"
            )
        if config.name and config.name != self.name:
            raise TritonError.invalid_arg(
                f"model name '{config.name}' in the new configuration does not match "
                f"model '{self.name}'"
            )
        new = mc.ModelConfig()
        new.CopyFrom(config)
        new.name = self.name
        self._config = new
        self.config_set = True

    def _replace_config(self, config: mc.ModelConfig) -> None:
        """Server side: install the normalised form of what the backend set."""
        self._config = config

    def _finish_initialization(self) -> None:
        self._initializing = False


class ModelInstance:
    """TRITONBACKEND_ModelInstance: one execution instance of a model (one instance-group count)."""

    def __init__(
        self,
        model: Model,
        name: str,
        kind: str,
        device_id: int,
        group: mc.ModelInstanceGroup,
        statistics: ModelStatistics | None = None,
    ) -> None:
        self.model = model
        self.name = name
        # "KIND_CPU", "KIND_GPU", "KIND_MODEL" (TRITONSERVER_InstanceGroupKind names).
        self.kind = kind
        self.device_id = device_id
        self.group = group
        self.is_passive = group.passive
        self.state: Any = None
        # The model version's statistics, which the report_* calls add to (None: an instance
        # made without a server, e.g. on a Ray worker, whose reports go nowhere).
        self._statistics = statistics

    def report_statistics(self, request: InferenceRequest, success: bool, exec_start_ns: int,
                          compute_start_ns: int, compute_end_ns: int, exec_end_ns: int) -> None:
        """TRITONBACKEND_ModelInstanceReportStatistics: count one request as the backend
        timed it (perf_counter_ns / steady clock). Only a backend with REPORTS_STATISTICS
        needs it: the server counts every other backend's requests."""
        if self._statistics is not None:
            self._statistics.record_reported(request, success, exec_start_ns,
                                             compute_start_ns, compute_end_ns, exec_end_ns)

    def report_memory_usage(self, usage: list[MemoryUsage]) -> None:
        """TRITONBACKEND_ModelInstanceReportMemoryUsage: what this instance holds, replacing
        its earlier report; the model's statistics show the sum over the model and its
        instances per memory type and device."""
        if self._statistics is not None:
            self._statistics.set_memory_usage(self.name, usage)

    def report_batch_statistics(self, batch_size: int, exec_start_ns: int,
                                compute_start_ns: int, compute_end_ns: int,
                                exec_end_ns: int) -> None:
        """TRITONBACKEND_ModelInstanceReportBatchStatistics: count one execution."""
        if self._statistics is not None:
            self._statistics.record_batch(
                batch_size, exec_start_ns, compute_start_ns, compute_end_ns, exec_end_ns,
                self.device_id if self.kind == "KIND_GPU" else -1)

    def report_response_statistics(self, index: int, start_ns: int,
                                   compute_output_start_ns: int, end_ns: int,
                                   error: TritonError | None = None) -> None:
        """TRITONBACKEND_ModelInstanceReportResponseStatistics: response number `index`
        (from 0, per request) took start..end; its outputs were made from
        `compute_output_start_ns` (0: an empty response). A CANCELLED error counts as a
        cancellation, any other as a failure. INVALID_ARG for timestamps out of order."""
        if error is None:
            outcome = RESPONSE_SUCCESS if compute_output_start_ns > 0 else RESPONSE_EMPTY
        else:
            outcome = RESPONSE_CANCEL if error.code is Code.CANCELLED else RESPONSE_FAIL
        if self._statistics is not None:
            self._statistics.record_response(index, outcome, start_ns, compute_output_start_ns,
                                             end_ns)

    def __repr__(self) -> str:
        return f"ModelInstance({self.name!r}, {self.kind}, device {self.device_id})"
