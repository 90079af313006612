"""PythonModelState: one Python-backend model (the python backend's ModelState in Triton):
which model.py it runs, under which Python, and the config auto-completion its
`auto_complete_config` may do. Named apart from `tritium.backend.ModelState`, the backend API's
helper base class."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tritium.backend import Model, TritonError

from ..wire import messages
from . import gpu_input_models
from .execution_env import ExecutionEnv
from .stub_launcher import StubProcess

if TYPE_CHECKING:
    from .backend import BackendState

log = logging.getLogger("tritium.backends.python")


class PythonModelState:
    """The model's file and interpreter, shared by its instances' stubs."""

    def __init__(self, model: Model, backend_state: BackendState) -> None:
        self.model = model
        self.backend = backend_state
        self.name = model.name
        if backend_state.backend_model is not None:
            self.model_path = backend_state.backend_model
        else:
            filename = model.config.default_model_filename or "model.py"
            self.model_path = model.version_path / filename
        if not self.model_path.is_file():
            raise TritonError.invalid_arg(
                f"unable to find the Python model file '{self.model_path}' for model "
                f"'{model.name}'"
            )
        self._env = ExecutionEnv(model)
        self.python = self._env.python
        parameter = model.config.parameters.get("FORCE_CPU_ONLY_INPUT_TENSORS")
        self.gpu_inputs = parameter is not None and parameter.string_value.lower() == "no"
        if self.gpu_inputs:
            gpu_input_models.add(self.name)

    def settings(self) -> dict[str, Any]:
        """What a stub needs to import the model (INIT and AUTO_COMPLETE)."""
        return {
            "model_path": str(self.model_path),
            "model_dir": str(self.model.version_path),
            "model_name": self.name,
            "sys_path": [str(self.model_path.parent), str(self.model_path.parent.parent)],
        }

    def close(self) -> None:
        if self.gpu_inputs:
            gpu_input_models.remove(self.name)
        self._env.close()


def may_auto_complete(model_path: Path) -> bool:
    """Whether the model can define `auto_complete_config`: its file, or a Python file next
    to it (a base class), names it. Saves a stub launch per model load for the many models
    that do not (a base class from an installed package is not seen: name the method in
    model.py, or let the config say everything)."""
    folders = {model_path.parent, model_path.parent.parent}
    for folder in folders:
        for path in [model_path] + sorted(folder.glob("*.py")):
            try:
                if "auto_complete_config" in path.read_text(errors="replace"):
                    return True
            except OSError:
                continue
    return False


def auto_complete(state: PythonModelState) -> str | None:
    """Run the model's `auto_complete_config` in a short-lived stub, as Triton does; the
    completed config as JSON, or None when the model has no such method."""
    stub = StubProcess(state, f"{state.name}_autocomplete", owner=None)
    try:
        stub.start()
        settings = state.settings()
        settings["config"] = state.model.config_json()
        error, result = stub.command((messages.AUTO_COMPLETE, settings))
        if error is not None:
            log.error("Failed to initialize Python stub for auto-complete: %s", error)
            raise TritonError.internal(error)
        return result
    finally:
        stub.stop()
