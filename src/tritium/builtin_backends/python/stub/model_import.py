"""Importing a model's `model.py` as Triton's stub imports it.

A python model's file is module `<stem>` of the package its version folder makes (`1.model`),
so that `from .helpers import x` finds the version folder's own modules, and is also known as
`model`; a Python-based backend's `model.py` is the top-level module `model`. Its own module
because INIT and AUTO_COMPLETE both import the model, and how is a contract with models'
code, not part of serving them.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from typing import Any


def import_model_file(path: str, backend_model: bool) -> Any:
    """Run the model file `path` as Triton's stub does; the module. `backend_model`: the
    `model.py` of a Python-based backend (its folder on sys.path, as Triton's stub imports
    it)."""
    if backend_model:
        return _import_file(path, "model")
    return _import_as_package_module(path)


def _import_as_package_module(path: str) -> Any:
    """Import the model file as module `<stem>` of the package its folder makes (`1.model`);
    it is also known as `model`, as before."""
    folder, filename = os.path.split(path)
    package_name = os.path.basename(folder)
    package = sys.modules.get(package_name)
    if package is None or list(getattr(package, "__path__", [])) != [folder]:
        package = types.ModuleType(package_name)
        package.__path__ = [folder]
        package.__package__ = package_name
        sys.modules[package_name] = package
    return _import_file(path, f"{package_name}.{os.path.splitext(filename)[0]}", "model")


def _import_file(path: str, name: str, *aliases: str) -> Any:
    """Run the file `path` as module `name` (also registered as each of `aliases`)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import model file {path}")
    module = importlib.util.module_from_spec(spec)
    for key in (name, *aliases):
        sys.modules[key] = module
    spec.loader.exec_module(module)
    return module
