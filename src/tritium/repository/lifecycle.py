"""ModelLifeCycle: loads and unloads model versions and tracks their states.

Each version moves LOADING -> READY, or -> UNAVAILABLE with the reason; unloading goes
UNLOADING -> UNAVAILABLE ("unloaded") after its in-flight requests finish. Versions load on a
thread pool of `--model-load-thread-count` threads, so one slow or failing model delays or
fails only itself.
"""

from __future__ import annotations

import enum
import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from ..backend.manager import BackendManager
from ..config import declares_ensemble
from ..errors import TritonError
from ..model import Model
from .manager import ModelRepositoryManager, ModelSource

log = logging.getLogger("tritium.repository")


class ModelReadyState(enum.Enum):
    UNKNOWN = "UNKNOWN"
    READY = "READY"
    UNAVAILABLE = "UNAVAILABLE"
    LOADING = "LOADING"
    UNLOADING = "UNLOADING"


@dataclass
class VersionStatus:
    version: int
    state: ModelReadyState
    reason: str = ""
    model: Model | None = None


class ModelLifeCycle:
    def __init__(
        self,
        repository: ModelRepositoryManager,
        backends: BackendManager,
        *,
        thread_count: int = 4,
    ) -> None:
        self._repository = repository
        self._backends = backends
        self._pool = ThreadPoolExecutor(max(thread_count, 1), thread_name_prefix="model-load")
        self._lock = threading.Lock()
        # name -> version -> status; version -1 stands for "no version could be determined".
        self._models: dict[str, dict[int, VersionStatus]] = {}

    # -- loading -----------------------------------------------------------------------------

    def load_models(self, names: list[str] | None = None) -> None:
        """Load `names` (every model in the repositories when None); blocks until all settle."""
        scan = self._repository.scan()
        wanted = sorted(set(scan.models) | set(scan.errors)) if names is None else names
        # Ensembles wait for their composing models while loading: queue them after the rest.
        wanted = sorted(
            wanted, key=lambda n: n in scan.models and declares_ensemble(scan.models[n].path)
        )
        futures: list[Future[None]] = []
        for name in wanted:
            if name in scan.errors:
                self._set(name, {-1: VersionStatus(-1, ModelReadyState.UNAVAILABLE, scan.errors[name])})
            elif name not in scan.models:
                self._set(
                    name,
                    {-1: VersionStatus(-1, ModelReadyState.UNAVAILABLE, f"model '{name}' is not found in the model repository")},
                )
            else:
                futures.append(self._pool.submit(self._load_model, scan.models[name]))
        for future in futures:
            future.result()

    def _load_model(self, source: ModelSource) -> None:
        try:
            config = self._repository.model_config(source)
            versions = self._repository.versions_to_load(source, config)
        except Exception as exc:
            versions = self._repository.available_versions(source)[-1:] or [-1]
            reason = str(exc)
            self._set(
                source.name,
                {v: VersionStatus(v, ModelReadyState.UNAVAILABLE, reason) for v in versions},
            )
            log.error("failed to load model '%s': %s", source.name, reason)
            return
        self._set(
            source.name, {v: VersionStatus(v, ModelReadyState.LOADING) for v in versions}
        )
        loads = [
            self._pool.submit(self._load_version, source, config, v) for v in versions[1:]
        ]
        self._load_version(source, config, versions[0])
        for future in loads:
            future.result()

    def _load_version(self, source: ModelSource, config, version: int) -> None:
        try:
            model = Model.load(
                config,
                version,
                source.path,
                self._backends,
                auto_complete=self._repository.auto_complete,
                gpu_count=self._repository.gpu_count,
            )
        except Exception as exc:
            reason = str(exc) if isinstance(exc, TritonError) else f"{type(exc).__name__}: {exc}"
            log.error("failed to load model '%s' version %d: %s", source.name, version, reason)
            self._update(source.name, VersionStatus(version, ModelReadyState.UNAVAILABLE, reason))
            return
        log.info("successfully loaded '%s' version %d", source.name, version)
        self._update(source.name, VersionStatus(version, ModelReadyState.READY, "", model))

    # -- lookup ------------------------------------------------------------------------------

    def get(self, name: str, version: int = -1) -> Model:
        """The READY model version serving requests for (name, version); -1 means the newest."""
        with self._lock:
            versions = self._models.get(name)
            if not versions:
                raise TritonError.not_found(f"Request for unknown model: '{name}' is not found")
            if version == -1:
                ready = [s for v, s in versions.items() if s.state is ModelReadyState.READY]
                if not ready:
                    raise TritonError.unavailable(
                        f"Request for unknown model: '{name}' has no available versions"
                    )
                return max(ready, key=lambda s: s.version).model  # type: ignore[return-value]
            status = versions.get(version)
            if status is None:
                raise TritonError.not_found(
                    f"Request for unknown model: '{name}' version {version} is not found"
                )
            if status.state is not ModelReadyState.READY:
                raise TritonError.unavailable(
                    f"Request for unknown model: '{name}' version {version} is not at ready "
                    f"state"
                )
            return status.model  # type: ignore[return-value]

    def status(self) -> dict[str, dict[int, VersionStatus]]:
        """A copy of every model's version states, for the model table, readiness and index."""
        with self._lock:
            return {
                name: {v: VersionStatus(s.version, s.state, s.reason, s.model) for v, s in versions.items()}
                for name, versions in self._models.items()
            }

    # -- unloading ---------------------------------------------------------------------------

    def unload_all(self, timeout: float | None = None) -> None:
        """Unload every loaded version, each after its in-flight requests (up to `timeout`)."""
        with self._lock:
            targets = [
                (name, s)
                for name, versions in self._models.items()
                for s in versions.values()
                if s.state is ModelReadyState.READY and s.model is not None
            ]
            for _, status in targets:
                status.state = ModelReadyState.UNLOADING
        for name, status in targets:
            assert status.model is not None
            status.model.unload(timeout)
            self._update(name, VersionStatus(status.version, ModelReadyState.UNAVAILABLE, "unloaded"))
        self._pool.shutdown(wait=True)

    # -- state updates -----------------------------------------------------------------------

    def _set(self, name: str, versions: dict[int, VersionStatus]) -> None:
        with self._lock:
            self._models[name] = versions

    def _update(self, name: str, status: VersionStatus) -> None:
        with self._lock:
            self._models.setdefault(name, {})[status.version] = status
