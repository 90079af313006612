"""A Python model's `auto_complete_config`, run in a short-lived stub as Triton runs it."""

from __future__ import annotations

import logging
from pathlib import Path

from tritium.backend import TritonError

from ..wire import messages
from .model_state import PythonModelState
from .stub_launcher import StubProcess

log = logging.getLogger("tritium.backends.python")


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
