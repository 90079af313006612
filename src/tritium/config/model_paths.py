"""The files a model configuration names stay inside the model's folder or the backend directories.

A configuration is not always the operator's: a load request's `config` override, and Triton's C
API, hand the server one written by a client. Every field that names a file the server opens,
imports or runs (`default_model_filename`, `cc_model_filenames`, `backend`, `runtime`,
`model_operations.op_library_filename`, the python backend's `EXECUTION_ENV_PATH`, the custom
batching strategy's `TRITON_BATCH_STRATEGY_PATH`) is checked
before any backend sees the configuration, so a client cannot make the server import a Python
file, load a library or run an interpreter from elsewhere on the machine (Triton 2.51 imports,
loads or runs them). A field that points outside fails the load with INVALID_ARG
naming the field; a `runtime` library that is not there fails it in Triton's words.

The check is on the path as written (normalised, `..` folded), not on where symbolic links lead:
links inside a repository are put there by its operator (a client's `files` override writes
regular files only), and models legitimately link to weights kept elsewhere.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tritonclient.grpc import model_config_pb2 as mc

from ..errors import TritonError

# The python backend substitutes this in EXECUTION_ENV_PATH (Triton's pb_env.cc).
MODEL_DIRECTORY_VARIABLE = "$$TRITON_MODEL_DIRECTORY"
# The custom batching strategy library a model names (Triton's TritonModel::Create).
BATCH_STRATEGY_PARAMETER = "TRITON_BATCH_STRATEGY_PATH"


def check_model_paths(config: mc.ModelConfig, model_path: Path, version: int,
                      backend_directories: Sequence[Path]) -> None:
    """INVALID_ARG if a file `config` names for version `version` of the model at `model_path`
    lies outside that model's folder (or, for the backend's own files, the backend
    directories)."""
    name = config.name or model_path.name
    model_root = _normal(model_path)
    model_only = _Roots("the model's folder", [model_root])
    with_backends = _Roots("the model's folder or a backend directory",
                           [model_root, *(_normal(d) for d in backend_directories)])
    version_path = model_root / str(version)
    if config.backend and (Path(config.backend).name != config.backend
                           or config.backend in (".", "..")):
        raise _refused(name, "backend", config.backend, "a backend's name, not a path")
    if config.default_model_filename:
        _check(name, "default_model_filename", config.default_model_filename, version_path,
               model_only)
    for capability, filename in config.cc_model_filenames.items():
        _check(name, f"cc_model_filenames['{capability}']", filename, version_path, model_only)
    if config.runtime:
        path = _normal(model_root / config.runtime)
        if not any(path.is_relative_to(root) for root in with_backends.paths):
            raise TritonError.invalid_arg(
                f"backend library name '{config.runtime}' escapes backend directory "
                f"'{model_root}', for model '{name}', check model config runtime field")
        _check_runtime_found(config, model_path, version, backend_directories)
    for index, library in enumerate(config.model_operations.op_library_filename):
        _check(name, f"model_operations.op_library_filename[{index}]", library, model_root,
               with_backends)
    strategy = config.parameters.get(BATCH_STRATEGY_PARAMETER)
    if strategy is not None:
        value = strategy.string_value
        _check(name, f"parameters['{BATCH_STRATEGY_PARAMETER}']",
               str(batch_strategy_path(value, model_root)), model_root, with_backends,
               shown=value)
    entry = config.parameters.get("EXECUTION_ENV_PATH")
    if entry is not None and entry.string_value:
        raw = entry.string_value
        path = raw.replace(MODEL_DIRECTORY_VARIABLE, str(model_root))
        _check(name, "parameters['EXECUTION_ENV_PATH']", path, model_root, with_backends,
               shown=raw)


def batch_strategy_path(value: str, model_path: Path) -> Path:
    """Where TRITON_BATCH_STRATEGY_PATH points: a relative path from the server's working
    directory when that file exists, as Triton reads it, else from the model's folder (the
    check above keeps either inside the model's folder or a backend directory)."""
    relative = Path(value)
    if "\0" not in value and not relative.is_absolute() and (Path.cwd() / relative).is_file():
        return Path.cwd() / relative
    return model_path / relative


def _check_runtime_found(config: mc.ModelConfig, model_path: Path, version: int,
                         backend_directories: Sequence[Path]) -> None:
    """Triton's GetBackendLibraryProperties: a `runtime` names a library found in the version
    folder, the model folder or <backend directory>/<backend>; Tritium's own backends answer
    to their library's usual name."""
    runtime = config.runtime
    if runtime in ("model.py", f"libtriton_{config.backend}.so"):
        return
    search = [model_path / str(version), model_path,
              *(Path(d) / config.backend for d in backend_directories)]
    if not any((folder / runtime).is_file() for folder in search):
        raise TritonError.invalid_arg(
            f"unable to find backend library '{runtime}' for model '{config.name}', searched: "
            + "".join(f"'{folder}' " for folder in search))


@dataclass(frozen=True)
class _Roots:
    """Where a field's path may lead, and those places in words."""

    words: str
    paths: list[Path]


def _check(model: str, field: str, value: str, base: Path, roots: _Roots,
           shown: str | None = None) -> None:
    """`value` (relative to `base` unless absolute) must lie inside one of `roots`."""
    path = _normal(base / value)  # an absolute value replaces base
    if "\0" in value or not any(path.is_relative_to(root) for root in roots.paths):
        raise _refused(model, field, shown if shown is not None else value,
                       f"a path inside {roots.words}")


def _normal(path: Path) -> Path:
    return Path(os.path.normpath(os.path.abspath(path)))


def _refused(model: str, field: str, value: str, expected: str) -> TritonError:
    return TritonError.invalid_arg(
        f"model '{model}': {field} '{value}' is not allowed; it must be {expected}"
    )
