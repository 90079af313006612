"""The Python a model's stubs run under (Triton's pb_env.cc): the server's own, or the one the
model's `EXECUTION_ENV_PATH` parameter names (an environment directory, an interpreter, or an
environment archive unpacked once for the model's lifetime)."""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

from tritium.backend import Model, TritonError

log = logging.getLogger("tritium.backends.python")

_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")


class ExecutionEnv:
    """One model's interpreter; `close` removes an environment unpacked for it."""

    def __init__(self, model: Model) -> None:
        self._temporary: str | None = None
        self.python = self._interpreter(model)

    def _interpreter(self, model: Model) -> str:
        entry = model.config.parameters.get("EXECUTION_ENV_PATH")
        if entry is None or not entry.string_value:
            return sys.executable
        raw = entry.string_value
        path = Path(raw.replace("$$TRITON_MODEL_DIRECTORY", str(model.repository_path)))
        if not path.is_absolute():
            path = model.repository_path / path
        if path.is_dir():
            return _python_in(path, raw)
        if path.is_file() and path.name.endswith(_ARCHIVE_SUFFIXES):
            target = tempfile.mkdtemp(prefix="tritium_python_env_")
            self._temporary = target
            log.info("Extracting Python execution env %s", path)
            with tarfile.open(path) as archive:
                if hasattr(tarfile, "tar_filter"):
                    # Keeps the links an environment has (bin/python -> /usr/bin/python3).
                    archive.extractall(target, filter="tar")
                else:  # pragma: no cover - Python without extraction filters
                    archive.extractall(target)
            return _python_in(Path(target), raw)
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
        raise TritonError.invalid_arg(
            f"EXECUTION_ENV_PATH '{raw}' of model '{model.name}' is neither a Python "
            "environment directory, a Python executable, nor an environment archive"
        )

    def close(self) -> None:
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)
            self._temporary = None


def _python_in(env: Path, raw: str) -> str:
    for name in ("bin/python3", "bin/python", "python.exe", "Scripts/python.exe"):
        candidate = env / name
        if candidate.exists():
            return str(candidate)
    raise TritonError.invalid_arg(
        f"EXECUTION_ENV_PATH '{raw}': no Python interpreter in {env} (expected bin/python)"
    )
