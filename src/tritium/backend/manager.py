"""BackendManager: finds a backend by name, loads it once, shares it, finalizes it last.

Search order, as docs/design.md lays out:
0. For a model: a compiled Triton backend in the model's own folder, first in its version folder
   (`<model>/<version>/libtriton_<name>.so`), then `<model>/libtriton_<name>.so`, as Triton
   searches them before its backend directory. Such a library is a backend of its own, keyed
   by its path (two models with their own copy get two backends, as in Triton).
1. `--backend-directory DIR`: `DIR/<name>/backend.py` (or a package `__init__.py`) with the entry
   points; `DIR/<name>/model.py` is a Python-based backend run by the `python` backend;
   `DIR/<name>/libtriton_<name>.so` is a compiled Triton backend (see `native/`).
2. Installed packages registering an entry point named `<name>` in group `tritium.backends`.
3. The built-in backends, `tritium.builtin_backends.<name>`; for `vllm` (Triton's vLLM backend,
   when neither of the above has it) the built-in `llm` backend, which takes the same model
   repositories (`model.json`, the same tensors) and engine settings, without vLLM.

A model whose configuration says `runtime: "model.py"` asks for the Python-based form of its
backend whatever else the backend has (Triton's GetBackendLibraryProperties): `DIR/<name>/model.py`,
else a built-in backend's own `python_runtime/model.py` (the pytorch backend's PyTorch 2 runtime).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import logging
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ..errors import TritonError
from . import cmdline_config
from .api import BackendAttributes, BackendLibrary
from .handles import Backend
from .instance_placement import InstancePlacement
from .server_api import NoServer, ServerApi

log = logging.getLogger("tritium.backend")

ENTRY_POINT_GROUP = "tritium.backends"
BUILTIN_PACKAGE = "tritium.builtin_backends"
# Backends Triton users name that a built-in backend serves when none of that name is found:
# Triton's vLLM backend is a Python-based backend over the vllm library; Tritium's llm backend
# serves the same repositories without either.
STAND_INS = {"vllm": "llm"}
# The `runtime` that names a Python-based backend (Triton's kPythonFilename).
PYTHON_RUNTIME = "model.py"
# Where a built-in backend keeps its Python-based runtime, inside its package.
BUILTIN_PYTHON_RUNTIME_FOLDER = "python_runtime"


# A backend found: its implementation, its directory (if any) and where it came from, in words.
_Found = tuple[object, Path | None, str]


@dataclass
class LoadedBackend:
    """A backend that has been initialized, with the models currently using it."""

    handle: Backend
    library: BackendLibrary
    attributes: BackendAttributes
    users: int = 0
    key: str = ""  # what the manager knows it by: the name, or a model-local library's path


class BackendManager:
    def __init__(
        self,
        backend_directories: list[Path] | None = None,
        backend_config: dict[str, dict[str, str]] | None = None,
        server: ServerApi | None = None,
    ) -> None:
        # Handed to every model (`model.server`); unit tests without a server get NoServer.
        self.server: ServerApi = server if server is not None else NoServer()
        # Where instances run when not here (a Ray cluster with --ray-address); None: here.
        self.placement: InstancePlacement | None = None
        self._directories = [Path(d) for d in backend_directories or []]
        # {backend name: {key: value}}; the "" entry applies to every backend. A server's
        # includes its own global settings (cmdline_config.with_server_settings).
        self._config = backend_config or {}
        self._loaded: dict[str, LoadedBackend] = {}
        self._lock = threading.Lock()

    @property
    def directories(self) -> list[Path]:
        """The --backend-directory folders, in search order."""
        return list(self._directories)

    def acquire(self, name: str, model_path: Path | None = None,
                version: int | None = None, *, runtime: str = "",
                model_name: str = "") -> LoadedBackend:
        """The backend `name` for the model `model_name` at `model_path` (version `version`),
        loading and initializing it on first use; `runtime` is the configuration's."""
        found: _Found | None = None
        if runtime == PYTHON_RUNTIME:
            found = self._python_runtime(name, model_name)
            key = f"{name} ({PYTHON_RUNTIME})"
        else:
            local = self._model_library(name, model_path, version)
            if local is not None:
                found = (self._native(name, local), local.parent, str(local))
            key = str(local) if local is not None else name
        # Resolved (and logged) for every model load, as Triton does, though only the load
        # that initializes the backend uses it.
        config = cmdline_config.resolve(self._config, name)
        with self._lock:
            loaded = self._loaded.get(key)
            if loaded is None:
                loaded = self._load(name, config, found if found is not None else self._find(name))
                loaded.key = key
                self._loaded[key] = loaded
            loaded.users += 1
            return loaded

    def release(self, loaded: LoadedBackend) -> None:
        """Drop one user; the last one finalizes the backend (TRITONBACKEND_Finalize)."""
        with self._lock:
            loaded.users -= 1
            key = loaded.key or loaded.handle.name
            if loaded.users > 0 or self._loaded.get(key) is not loaded:
                return
            del self._loaded[key]
        self._finalize(loaded)

    def finalize_all(self) -> None:
        with self._lock:
            remaining = list(self._loaded.values())
            self._loaded.clear()
        for loaded in remaining:
            self._finalize(loaded)

    def loaded_names(self) -> list[str]:
        with self._lock:
            return sorted(loaded.handle.name for loaded in self._loaded.values())

    def loaded_backends(self) -> list[tuple[str, str, dict[str, str]]]:
        """(name, where it was loaded from, its configuration) of each loaded backend."""
        with self._lock:
            return [(name, loaded.library.origin, dict(loaded.handle.config))
                    for name, loaded in sorted(self._loaded.items())]

    def _load(self, name: str, config: dict[str, str], found: _Found) -> LoadedBackend:
        implementation, directory, origin = found
        library = BackendLibrary(name, implementation, origin)
        handle = Backend(name, directory, config, server=self.server)
        if not library.logs_configuration:
            # The record Triton's own backends log first thing in TRITONBACKEND_Initialize; a
            # compiled backend logs what it likes itself.
            log.debug("backend configuration:\n%s", handle.config_json())
        library.initialize(handle)
        attributes = BackendAttributes()
        library.get_backend_attribute(handle, attributes)
        log.info("loaded backend '%s' from %s", name, origin)
        return LoadedBackend(handle, library, attributes)

    def _finalize(self, loaded: LoadedBackend) -> None:
        try:
            loaded.library.finalize(loaded.handle)
        except Exception:  # a failing finalize must not stop the others
            log.exception("backend '%s' failed to finalize", loaded.handle.name)

    @staticmethod
    def _check_name(name: str) -> None:
        if not name or "/" in name or name.startswith("."):
            raise TritonError.invalid_arg(f"invalid backend name '{name}'")

    def _model_library(self, name: str, model_path: Path | None,
                       version: int | None) -> Path | None:
        """A compiled backend in the model's version folder or model folder (Triton's order)."""
        if model_path is None:
            return None
        self._check_name(name)
        folders = [model_path / str(version)] if version is not None else []
        for folder in [*folders, model_path]:
            library = folder / f"libtriton_{name}.so"
            if library.is_file():
                return library
        return None

    @staticmethod
    def _native(name: str, library: Path) -> object:
        """A compiled Triton backend, run through Tritium's C API library."""
        from .native import NativeBackend

        return NativeBackend(name, library)

    def _python_runtime(self, name: str, model_name: str) -> _Found:
        """The Python-based form of backend `name`: the python backend running
        `DIR/<name>/model.py`, or the built-in backend's `python_runtime/model.py`."""
        self._check_name(name)
        searched = [base / name for base in self._directories]
        if name.isidentifier():
            spec = importlib.util.find_spec(f"{BUILTIN_PACKAGE}.{name}")
            if spec is not None and spec.submodule_search_locations:
                searched += [Path(location) / BUILTIN_PYTHON_RUNTIME_FOLDER
                             for location in spec.submodule_search_locations]
        for folder in searched:
            if (folder / PYTHON_RUNTIME).is_file():
                return self._python_based(name, folder)
        raise TritonError.invalid_arg(
            f"unable to find Python backend based backend library '{PYTHON_RUNTIME}' for model "
            f"'{model_name}', searched: "
            + " ".join(f"'{folder / PYTHON_RUNTIME}'" for folder in searched))

    @staticmethod
    def _python_based(name: str, folder: Path) -> _Found:
        # The python backend runs folder/model.py for every model naming backend `name`; it
        # reads the file from `Backend.directory`.
        python = _import_builtin("python")
        if python is None:
            raise TritonError.unsupported(
                f"backend '{name}' is a Python-based backend ({folder / PYTHON_RUNTIME}), "
                "which needs the python backend"
            )
        return python, folder, f"python-based backend {folder / PYTHON_RUNTIME}"

    def _find(self, name: str) -> _Found:
        self._check_name(name)
        for base in self._directories:
            found = self._find_in_directory(base, name)
            if found is not None:
                return found
        for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            if entry.name == name:
                return entry.load(), None, f"entry point {entry.value}"
        module = _import_builtin(name)
        if module is not None:
            return module, None, f"built-in {module.__name__}"
        stand_in = _import_builtin(STAND_INS.get(name, ""))
        if stand_in is not None:
            log.info("backend '%s' is in no --backend-directory and no entry point: its models "
                     "are served by the built-in '%s' backend", name, STAND_INS[name])
            return stand_in, None, f"built-in {stand_in.__name__} (standing in for '{name}')"
        searched = ", ".join(str(d) for d in self._directories) or "no --backend-directory"
        raise TritonError.invalid_arg(
            f"unable to find backend library for backend '{name}', try specifying runtime on "
            f"the model configuration. (searched {searched}, entry point group "
            f"'{ENTRY_POINT_GROUP}' and the built-in backends)"
        )

    def _find_in_directory(self, base: Path, name: str) -> _Found | None:
        folder = base / name
        if not folder.is_dir():
            return None
        for filename in ("backend.py", "__init__.py"):
            if (folder / filename).is_file():
                return _import_file(folder / filename, name), folder, str(folder / filename)
        if (folder / PYTHON_RUNTIME).is_file():
            return self._python_based(name, folder)
        shared_library = folder / f"libtriton_{name}.so"
        if shared_library.is_file():
            # A compiled Triton backend, run through Tritium's C API library.
            from .native import NativeBackend

            return NativeBackend(name, shared_library), folder, str(shared_library)
        return None


def _import_file(path: Path, name: str) -> ModuleType:
    module_name = f"tritium_backend_{name}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise TritonError.invalid_arg(f"cannot import backend '{name}' from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[module_name]
        raise TritonError.invalid_arg(
            f"failed to import backend '{name}' from {path}: {type(exc).__name__}: {exc}"
        ) from exc
    return module


def _import_builtin(name: str) -> ModuleType | None:
    if not name.isidentifier():
        return None
    try:
        return importlib.import_module(f"{BUILTIN_PACKAGE}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name in (f"{BUILTIN_PACKAGE}.{name}",):
            return None
        raise
