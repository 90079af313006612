"""PythonModelState: one Python-backend model (the python backend's ModelState in Triton):
which model.py it runs and under which Python (its `auto_complete_config` runs in
`auto_complete.py`, which starts a stub: the stubs depend on the model state, not the other way
round). Named apart from `tritium.backend.ModelState`, the backend API's helper base class."""

from __future__ import annotations

from typing import Any

from tritium.backend import Model, TritonError

from . import gpu_input_models
from .backend_state import BackendState
from .execution_env import ExecutionEnv


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
        if not self.model_path.is_file():  # Triton's stub says so, as INTERNAL
            raise TritonError.internal(
                "Failed to preinitialize Python stub: Python model file not found in "
                f"'{self.model_path}'"
            )
        self._env = ExecutionEnv(model)
        self.python = self._env.python
        parameter = model.config.parameters.get("FORCE_CPU_ONLY_INPUT_TENSORS")
        self.gpu_inputs = parameter is not None and parameter.string_value.lower() == "no"
        if self.gpu_inputs:
            gpu_input_models.add(self.name)

    def settings(self) -> dict[str, Any]:
        """What a stub needs to import the model (INIT and AUTO_COMPLETE)."""
        # A Python-based backend's model.py (backends/<name>/model.py) is imported as the
        # top-level module `model` with only its folder on the path, as Triton's stub does: as
        # a package named after the folder, backends/vllm/model.py would hide the vllm library
        # from itself.
        backend_model = self.backend.backend_model is not None
        folders = [self.model_path.parent] if backend_model else \
            [self.model_path.parent, self.model_path.parent.parent]
        return {
            "model_path": str(self.model_path),
            "model_dir": str(self.model.version_path),
            "model_name": self.name,
            "backend_model": backend_model,
            "sys_path": [str(folder) for folder in folders],
        }

    def close(self) -> None:
        if self.gpu_inputs:
            gpu_input_models.remove(self.name)
        self._env.close()
