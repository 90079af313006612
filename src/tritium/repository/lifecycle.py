"""ModelLifeCycle: loads and unloads model versions and tracks their states.

Each version moves LOADING -> READY, or -> UNAVAILABLE with the reason; unloading goes
UNLOADING -> UNAVAILABLE ("unloaded") after its in-flight requests finish. A reload keeps the
old versions serving until the new ones are READY, then swaps them in at once. The versions of
one model load on a thread pool of `--model-load-thread-count` threads. Which models to load,
and in which order, is ModelRepositoryManager's business
(repository/model_repository_manager.py).
"""

from __future__ import annotations

import enum
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from tritonclient.grpc import model_config_pb2 as mc

from ..backend.manager import BackendManager
from ..errors import TritonError
from ..model import TritonModel
from ..response_cache import ResponseCache
from ..scheduler.rate_limiter import RateLimiter
from .scanner import ModelSource, RepositoryScanner

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
    model: TritonModel | None = None


class ModelLifeCycle:
    def __init__(
        self,
        repository: RepositoryScanner,
        backends: BackendManager,
        *,
        thread_count: int = 4,
        response_cache: ResponseCache | None = None,
        rate_limiter: RateLimiter | None = None,
    ) -> None:
        self._repository = repository
        self._backends = backends
        self._response_cache = response_cache
        self._rate_limiter = rate_limiter
        self._pool = ThreadPoolExecutor(max(thread_count, 1), thread_name_prefix="model-load")
        self._lock = threading.Lock()
        # name -> version -> status; version -1 stands for "no version could be determined".
        self._models: dict[str, dict[int, VersionStatus]] = {}
        self._model_locks: dict[str, threading.Lock] = {}
        self._retiring: list[threading.Thread] = []  # replaced versions still draining

    # -- loading -----------------------------------------------------------------------------

    def load(self, source: ModelSource, config: mc.ModelConfig) -> None:
        """Load, or reload, the versions `config`'s version policy selects from `source`.

        A reload swaps each new version in only once it is READY; the version it replaces
        takes no new request and is unloaded after its in-flight requests finish. A version
        that fails to load leaves the one it would have replaced serving. Versions the policy no
        longer selects are unloaded. Raises TritonError (Triton's "version V is at UNAVAILABLE
        state: ..." text) if any version failed.
        """
        name = source.name
        with self._model_lock(name):
            try:
                versions = self._repository.versions_to_load(source, config)
            except TritonError as exc:
                self._fail_unloaded(name, str(exc), self._repository.available_versions(source))
                raise
            with self._lock:
                old = dict(self._models.get(name, {}))
                current = self._models.setdefault(name, {})
                for v in versions:
                    if v not in current or current[v].state is not ModelReadyState.READY:
                        current[v] = VersionStatus(v, ModelReadyState.LOADING)
            others = [
                self._pool.submit(self._load_version, source, config, v) for v in versions[1:]
            ]
            results = [self._load_version(source, config, versions[0])]
            results += [future.result() for future in others]
            self._swap(name, old, dict(zip(versions, results)))

    def _load_version(
        self, source: ModelSource, config: mc.ModelConfig, version: int
    ) -> TritonModel | str:
        """The loaded version, or the reason it failed."""
        try:
            model = TritonModel.load(
                config,
                version,
                source.path,
                self._backends,
                auto_complete=self._repository.auto_complete,
                gpu_count=self._repository.gpu_count,
                response_cache=self._response_cache,
                rate_limiter=self._rate_limiter,
            )
        except Exception as exc:
            reason = str(exc) if isinstance(exc, TritonError) else f"{type(exc).__name__}: {exc}"
            log.error("failed to load model '%s' version %d: %s", source.name, version, reason)
            return reason
        log.info("successfully loaded '%s' version %d", source.name, version)
        return model

    def _swap(
        self, name: str, old: dict[int, VersionStatus], loaded: dict[int, TritonModel | str]
    ) -> None:
        """Put the newly loaded versions in service at once, retire what they replace."""
        retired: list[VersionStatus] = []
        failures: list[str] = []
        with self._lock:
            current: dict[int, VersionStatus] = {}
            for version, result in loaded.items():
                previous = old.get(version)
                serving = previous is not None and previous.state is ModelReadyState.READY
                if isinstance(result, TritonModel):
                    current[version] = VersionStatus(version, ModelReadyState.READY, "", result)
                    if serving:
                        retired.append(previous)  # type: ignore[arg-type]
                else:
                    failures.append(f"version {version} is at UNAVAILABLE state: {result};")
                    failed = VersionStatus(version, ModelReadyState.UNAVAILABLE, result)
                    current[version] = previous if serving and previous else failed
            for version, status in old.items():
                if version in loaded:
                    continue
                if status.state is ModelReadyState.READY:
                    retired.append(status)
                    current[version] = VersionStatus(
                        version, ModelReadyState.UNLOADING, "", status.model
                    )
                elif version >= 0:
                    current[version] = status
            self._models[name] = current
        for status in retired:
            self._retire(name, status)
        if failures:
            raise TritonError.invalid_arg("".join(failures))

    def _retire(self, name: str, status: VersionStatus) -> None:
        """Unload a replaced or dropped version once its in-flight requests are done."""
        model = status.model
        assert model is not None
        model.retire()

        def unload() -> None:
            model.unload(None)
            log.info("successfully unloaded '%s' version %d", name, status.version)
            with self._lock:
                versions = self._models.get(name, {})
                entry = versions.get(status.version)
                if entry is not None and entry.model is model:
                    versions[status.version] = _unloaded(status.version)

        thread = threading.Thread(target=unload, name=f"retire-{name}", daemon=True)
        with self._lock:
            self._retiring = [t for t in self._retiring if t.is_alive()] + [thread]
        thread.start()

    def mark_unavailable(self, name: str, reason: str, versions: list[int] | None = None) -> None:
        """Record a model that could not even start loading (bad config, unknown name)."""
        with self._model_lock(name):
            self._fail_unloaded(name, reason, versions or [])

    def _fail_unloaded(self, name: str, reason: str, versions: list[int]) -> None:
        """A model that failed before any version loaded; versions still serving keep serving."""
        with self._lock:
            current = self._models.get(name, {})
            if any(s.state is ModelReadyState.READY for s in current.values()):
                return
            self._models[name] = {
                v: VersionStatus(v, ModelReadyState.UNAVAILABLE, reason)
                for v in versions[-1:] or [-1]
            }

    def _model_lock(self, name: str) -> threading.Lock:
        """Loads and unloads of one model run one at a time."""
        with self._lock:
            return self._model_locks.setdefault(name, threading.Lock())

    # -- lookup ------------------------------------------------------------------------------

    def get(self, name: str, version: int = -1) -> TritonModel:
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

    def unload(self, name: str) -> None:
        """Unload every version of `name` once its in-flight requests finish (blocks)."""
        with self._model_lock(name):
            with self._lock:
                versions = self._models.get(name, {})
                targets = [s for s in versions.values() if s.state is ModelReadyState.READY]
                for status in targets:
                    versions[status.version] = VersionStatus(
                        status.version, ModelReadyState.UNLOADING, "", status.model
                    )
            for status in targets:
                assert status.model is not None
                status.model.unload(None)
                log.info("successfully unloaded '%s' version %d", name, status.version)
                self._update(name, _unloaded(status.version))

    def forget(self, name: str) -> None:
        """Unload `name` and drop its states: its directory left the repository."""
        self.unload(name)
        with self._lock:
            self._models.pop(name, None)

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
            retiring = list(self._retiring)
        for name, status in targets:
            assert status.model is not None
            status.model.unload(timeout)
            self._update(name, _unloaded(status.version))
        for thread in retiring:
            thread.join(timeout)
        self._pool.shutdown(wait=True)

    # -- state updates -----------------------------------------------------------------------

    def _update(self, name: str, status: VersionStatus) -> None:
        with self._lock:
            self._models.setdefault(name, {})[status.version] = status


def _unloaded(version: int) -> VersionStatus:
    return VersionStatus(version, ModelReadyState.UNAVAILABLE, "unloaded")
