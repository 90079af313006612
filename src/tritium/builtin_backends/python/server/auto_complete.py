"""A Python model's `auto_complete_config`, run in a short-lived stub as Triton runs it."""

from __future__ import annotations

import ast
import importlib.util
import logging
import os
import sys
import threading
from pathlib import Path

from tritium.backend import TritonError

from ..wire import messages
from .model_state import PythonModelState
from .stub_launcher import StubProcess

log = logging.getLogger("tritium.backends.python")

# One ast.parse at a time: models load on several threads, and CPython before 3.11.5 keeps the
# AST converter's recursion depth per interpreter, so two parses side by side can fail with
# "SystemError: AST constructor recursion depth mismatch" (gh-106905), which failed a load.
_parse_lock = threading.Lock()


def may_auto_complete(model_path: Path) -> bool:
    """Whether the model can define `auto_complete_config`: its file, a Python file next to
    it, or a module it imports from its folders or PYTHONPATH (a base class, `from helpers
    import *`) names it, or it imports a module found nowhere the server looks (one on a
    path the model adds itself: it may). Saves a stub launch per model load for the many
    models that do not (a base class from an installed package is not seen: name the method
    in model.py, or let the config say everything)."""
    folders = [model_path.parent, model_path.parent.parent]
    candidates = [model_path] + [p for folder in folders for p in sorted(folder.glob("*.py"))]
    folders += [Path(entry) for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                if entry]
    for name in _imported_modules(model_path):
        files = [path for folder in folders
                 for path in (folder / f"{name}.py", folder / name / "__init__.py")
                 if path.is_file()]
        if not files and _not_installed(name):
            return True
        candidates += files
    for path in candidates:
        try:
            if "auto_complete_config" in path.read_text(errors="replace"):
                return True
        except OSError:
            continue
    return False


def _not_installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True


def _imported_modules(model_path: Path) -> set[str]:
    """The top-level names of the modules model.py imports, other than the standard
    library's (nothing when it does not parse: its load says why)."""
    try:
        source = model_path.read_text(errors="replace")
        with _parse_lock:
            tree = ast.parse(source)
    except (OSError, SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names)


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
