"""SageMaker's multi-model endpoint (MME): models loaded, listed, invoked and unloaded by name.

SageMaker unpacks each model archive into a directory of its own (`/opt/ml/models/<hash>/model`)
and names it in a load request: `{"model_name": <name>, "url": <directory>}`. The directory is
either one model (its config.pbtxt at the top) or a repository of several, of which the
ensemble (a config with `platform: "ensemble"`) is the one served, or else the last directory
found. That directory is registered as a repository of its own, the served model mapped to the
name (or to the `X-Amzn-SageMaker-Target-Model` header's), and loaded; unloading it unloads what
it loaded with it and unregisters the repository. Status codes are Triton's: 409 for a name
already loaded, 404 for one that is not, 507 when the failure reads as an out-of-memory error,
400 for the rest.

A directory that is one model is registered as its parent directory, the model being its last
component: Triton splits `/opt/ml/models/<hash>/model` so, and Tritium takes directories
anywhere else the same way (Triton's pattern names that root only).
"""

from __future__ import annotations

import json
import logging
import re
import threading
from pathlib import Path
from typing import Any

from ...errors import Code, TritonError
from ...server import InferenceServer
from ..extensions.json_codec import nesting_too_deep
from ..http.repository import Answer

log = logging.getLogger("tritium.http")

TARGET_MODEL_HEADER = b"x-amzn-sagemaker-target-model"
_ENSEMBLE = re.compile(r'platform:\s*"ensemble"')
_NOT_FOUND: Answer = (404, None)
_OK: Answer = (200, None)
# What an out-of-memory failure says, in the frameworks' words (Triton's list).
_OUT_OF_MEMORY = (
    "CUDA out of memory", "CUDA_OUT_OF_MEMORY", "Out of memory", "Out Of Memory", "out of memory",
    "MemoryError", "OutOfMemory", "OOM", "Dst tensor is not initialized",
    "Src tensor is not initialized", "CNMEM_STATUS_OUT_OF_MEMORY",
    "CUDNN_STATUS_NOT_INITIALIZED", "CUBLAS_STATUS_ALLOC_FAILED",
    "CUBLAS_STATUS_NOT_INITIALIZED", "Failed to allocate memory", "failed to allocate memory",
    "No space left on device",
)


def failure_status(error: TritonError) -> int:
    """SageMaker's status for a failed load or inference: 507 for lack of memory, else 400."""
    return 507 if any(marker in error.message for marker in _OUT_OF_MEMORY) else 400


def _refusal(error: TritonError) -> Answer:
    return failure_status(error), {"error": error.message}


class MultiModels:
    """The models loaded through /models: name -> the repository registered for it."""

    def __init__(self, server: InferenceServer) -> None:
        self.server = server
        self._repositories: dict[str, str] = {}
        self._lock = threading.Lock()

    def loaded(self, name: str) -> bool:
        with self._lock:
            return name in self._repositories

    def listing(self) -> dict[str, Any]:
        """GET /models: each model as its name and repository; Triton lists a model that is
        not ready (version 1) as an empty object."""
        with self._lock:
            entries = list(self._repositories.items())
        return {"models": [{"modelName": name, "modelUrl": url}
                           if self.server.model_ready(name, 1) else {}
                           for name, url in entries]}

    def describe(self, name: str) -> Answer:
        """GET /models/<name>."""
        with self._lock:
            url = self._repositories.get(name)
        if url is None:
            return _NOT_FOUND
        return 200, {"modelName": name, "modelUrl": url}

    def load(self, body: bytes, target_header: str | None) -> Answer:
        """POST /models: register the request's directory and load its model (blocks)."""
        try:
            name, url = _load_request(body)
        except TritonError as exc:
            return 400, {"error": exc.message}
        target = target_header or name
        log.info("Loading SageMaker TargetModel: %s", target)
        repository, directory = _served_directory(Path(url))
        try:
            self.server.register_model_repository(repository, [(directory, target)])
        except TritonError as exc:
            return (409 if exc.code is Code.ALREADY_EXISTS else 400), {"error": exc.message}
        try:
            self.server.load_model(target)
        except TritonError as exc:
            if exc.code is not Code.ALREADY_EXISTS:
                self._unregister(repository)
                return _refusal(exc)
            return 409, {"error": exc.message}
        with self._lock:
            self._repositories[name] = str(repository)
        return _OK

    def unload(self, name: str, target_header: str | None) -> Answer:
        """DELETE /models/<name>: unload the model and what it loaded, forget its repository
        (blocks)."""
        with self._lock:
            repository = self._repositories.get(name)
        if repository is None:
            return _NOT_FOUND
        target = target_header or name
        log.info("Unloading SageMaker TargetModel: %s", target)
        try:
            self.server.unload_model(target, unload_dependents=True)
        except TritonError as exc:
            log.error("Error when unloading SageMaker Model with dependents for model: %s",
                      target)
            return 400, {"error": exc.message}
        answer = _OK
        try:
            self.server.unregister_model_repository(repository)
        except TritonError as exc:
            log.error("Unable to unregister model repository for path: %s", repository)
            answer = 400, {"error": exc.message}
        with self._lock:
            self._repositories.pop(name, None)
        return answer

    def _unregister(self, repository: Path) -> None:
        try:
            self.server.unregister_model_repository(repository)
        except TritonError:
            pass
        log.debug("Unregistered model repository due to load failure: %s", repository)


def _load_request(body: bytes) -> tuple[str, str]:
    """(model_name, url) of a load request; both "" when absent, as Triton reads them."""
    if not body:
        return "", ""
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise TritonError.invalid_arg(f"failed to parse the request JSON buffer: {exc}"
                                      ) from None
    except RecursionError:
        raise nesting_too_deep() from None
    if not isinstance(document, dict):
        document = {}
    values = []
    for key in ("model_name", "url"):
        value = document.get(key, "")
        if not isinstance(value, str):
            raise TritonError.internal("attempt to access JSON non-string as string")
        values.append(value)
    return values[0], values[1]


def _served_directory(url: Path) -> tuple[Path, str]:
    """(the repository to register, the directory in it to serve) for a load request's url."""
    if (url / "config.pbtxt").is_file():
        return url.parent, url.name
    served = ""
    ensemble = ""
    subdirectories = sorted(p for p in url.iterdir() if p.is_dir()) if url.is_dir() else []
    for subdirectory in subdirectories:
        served = subdirectory.name
        config = subdirectory / "config.pbtxt"
        try:
            text = config.read_text(errors="replace")
        except OSError:
            continue
        if _ENSEMBLE.search(text):
            log.info("SageMaker front-end detected an Ensemble config at path: %s", config)
            ensemble = subdirectory.name
    if len(subdirectories) > 5:
        log.warning("Several model directories found. If using ensemble, smaller ensembles "
                    "are recommended for better memory management.")
    return url, ensemble or served


__all__ = ["TARGET_MODEL_HEADER", "MultiModels", "failure_status"]
