"""ModelLifeCycle: loads and unloads model versions and tracks their states.

Each version moves LOADING -> READY, or -> UNAVAILABLE with the reason; unloading goes
UNLOADING -> UNAVAILABLE ("unloaded") after its in-flight requests finish. A reload keeps the
old versions serving until the new ones are READY, then swaps them in at once; a load in
which any version fails unloads the versions it loaded and leaves the old ones serving. A
reload that changes only a serving version's instance groups updates its instances in place
instead (model_timestamp says when), as Triton's does. The versions of
one model load on a thread pool of `--model-load-thread-count` threads. As Triton's life cycle
picks TritonModel::Create or EnsembleModel::Create, this one picks TritonModel (a backend's
model) or EnsembleModel, to which it hands the composing models' configurations. Which models
to load, and in which order, is ModelRepositoryManager's business
(repository/model_repository_manager.py). Models are kept by identifier (the name, unless
--model-namespacing gives it a namespace: scanner.model_identifier), as Triton's are.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from tritonclient.grpc import model_config_pb2 as mc

from ..backend.manager import BackendManager
from ..config import ENSEMBLE_PLATFORM
from ..errors import Code, TritonError
from ..latency_summary import LatencySummaries
from ..model import EnsembleModel, LoadedModel, TritonModel
from ..response_cache import ResponseCache
from ..scheduler import EnsembleServer
from ..scheduler.rate_limiter import RateLimiter
from .model_timestamp import LoadStamp, version_fingerprint
from .ready_state import ModelReadyState, VersionStatus
from .repo_agents import RepoAgentModels
from .scanner import ModelSource, RepositoryScanner, model_identifier

log = logging.getLogger("tritium.repository")

# How often an exiting server looks whether its requests in flight are done.
_DRAIN_POLL_S = 0.05


class ModelLifeCycle:
    def __init__(
        self,
        repository: RepositoryScanner,
        backends: BackendManager,
        *,
        thread_count: int = 4,
        response_cache: ResponseCache | None = None,
        rate_limiter: RateLimiter | None = None,
        server: EnsembleServer | None = None,
        load_retry_count: int = 0,
        summary_quantiles: tuple[tuple[float, float], ...] | None = None,
    ) -> None:
        self._repository = repository
        self._load_retry_count = load_retry_count  # --model-load-retry-count
        # --metrics-config summary_latencies=true: each loaded version keeps latency summaries.
        self._summary_quantiles = summary_quantiles
        self._backends = backends
        # What ensembles route their steps through (None: no ensemble can load).
        self._server = server
        self._response_cache = response_cache
        self._rate_limiter = rate_limiter
        self._pool = ThreadPoolExecutor(max(thread_count, 1), thread_name_prefix="model-load")
        self._lock = threading.Lock()
        # identifier -> version -> status; version -1 stands for "no version could be
        # determined".
        self._models: dict[str, dict[int, VersionStatus]] = {}
        # identifier -> the model's name (they differ only with namespacing).
        self._names: dict[str, str] = {}
        self._model_locks: dict[str, threading.Lock] = {}
        self._retiring: list[threading.Thread] = []  # replaced versions still draining
        # The repository agents of each loaded version (by id of its model), until it unloads.
        self._agents: dict[int, RepoAgentModels] = {}

    # -- loading -----------------------------------------------------------------------------

    def load(self, source: ModelSource, config: mc.ModelConfig,
             agents: RepoAgentModels | None = None, *, config_provided: bool = True) -> None:
        """Load, or reload, the versions `config`'s version policy selects from `source`.

        A reload swaps the new versions in only once they are all READY; a version it replaces
        takes no new request and is unloaded after its in-flight requests finish, as are the
        versions the policy no longer selects. If any version fails, the load is abandoned as
        Triton abandons it: the versions it loaded are unloaded again and what served before
        serves on. Raises TritonError (Triton's "version V is at UNAVAILABLE state: ..." text)
        then. Logged once for the model, as Triton logs it: "successfully loaded '<model>'"
        or "failed to load '<model>'". The model's repository `agents` (taken over) hear how
        the load went and stay with the versions it loaded. A model without a configuration
        file (`config_provided` false) fails unless its backend gives it one, as in Triton.
        """
        try:
            self._load(source, config, agents, config_provided)
        except BaseException:
            if agents is not None:
                agents.load_failed()
            raise

    def _load(self, source: ModelSource, config: mc.ModelConfig,
              agents: RepoAgentModels | None, config_provided: bool) -> None:
        name = source.key
        with self._model_lock(name):
            log.debug("AsyncLoad() '%s'", name)  # Triton's verbose trace of a load's steps
            with self._lock:
                self._names[name] = source.name
            try:
                versions = self._repository.versions_to_load(source, config)
            except TritonError as exc:
                self._fail_unloaded(name, str(exc), self._repository.available_versions(source))
                raise
            stamps = {v: LoadStamp(config, version_fingerprint(
                source.path, v, self._repository.config_name)) for v in versions}
            with self._lock:
                old = dict(self._models.get(name, {}))
                current = self._models.setdefault(name, {})
                for v in versions:
                    if v not in current or current[v].state is not ModelReadyState.READY:
                        current[v] = VersionStatus(v, ModelReadyState.LOADING)
            updating = {v for v in versions if _updatable(old.get(v), stamps[v])}
            tasks: list[Callable[[], LoadedModel | str]] = [
                partial(self._update_version, old[v], config, name) if v in updating
                else partial(self._load_version, source, config, v, config_provided)
                for v in versions
            ]
            others = [self._pool.submit(task) for task in tasks[1:]]
            results = [tasks[0]()]
            results += [future.result() for future in others]
            outcome = dict(zip(versions, results, strict=True))
            log.debug("OnLoadFinal() '%s' for all version(s)", name)
            failed = {v: r for v, r in outcome.items() if isinstance(r, str)}
            if failed:
                self._abandon(name, old, outcome, stamps, updating)
                log.info("failed to load '%s'", name)
                raise TritonError.invalid_arg("".join(
                    f"version {v} is at {_failed_state(v, updating).value} state: {reason};"
                    for v, reason in failed.items()))
            loaded = {v: r for v, r in outcome.items() if isinstance(r, LoadedModel)}
            self._swap(name, old, loaded, stamps)
            if agents is not None:  # they stay with the versions loaded (not updated) here
                new = [model for v, model in loaded.items() if v not in updating]
                with self._lock:
                    self._agents.update((id(model), agents) for model in new)
                agents.loaded(new)
            log.info("successfully loaded '%s'", name)

    def _update_version(
        self, status: VersionStatus, config: mc.ModelConfig, name: str
    ) -> LoadedModel | str:
        """Triton's UpdateModelConfig: the serving version with `config`'s instance groups, or
        the reason it could not take them (it serves on as it was)."""
        model = status.model
        assert isinstance(model, TritonModel)
        log.info("loading: %s:%d", name, status.version)
        try:
            model.update_instance_groups(config)
        except Exception as exc:
            reason = exc.message if isinstance(exc, TritonError) else f"{type(exc).__name__}: {exc}"
            log.error("failed to update '%s' version %d: %s", name, status.version, reason)
            return reason
        return model

    def _load_version(
        self, source: ModelSource, config: mc.ModelConfig, version: int,
        config_provided: bool = True,
    ) -> LoadedModel | str:
        """The loaded version, or the reason it failed (after --model-load-retry-count more
        tries). Logged as Triton logs it: "loading: <model>:<version>", and on failure "failed
        to load '<model>' version <version>: <Code>: <reason>"."""
        log.info("loading: %s:%d", source.key, version)
        for attempt in range(self._load_retry_count + 1):
            result = self._try_load_version(source, config, version, config_provided)
            if isinstance(result, LoadedModel):
                return result
            if attempt < self._load_retry_count:
                log.info("retrying to load model '%s' version %d", source.key, version)
        return result

    def _try_load_version(
        self, source: ModelSource, config: mc.ModelConfig, version: int,
        config_provided: bool,
    ) -> LoadedModel | str:
        try:
            model: LoadedModel
            if config.platform == ENSEMBLE_PLATFORM:
                model = self._load_ensemble(config, version, source)
            else:
                model = TritonModel.load(
                    config,
                    version,
                    source.path,
                    self._backends,
                    auto_complete=self._repository.auto_complete,
                    config_provided=config_provided,
                    gpus=self._repository.gpus,
                    response_cache=self._response_cache,
                    rate_limiter=self._rate_limiter,
                )
        except Exception as exc:
            if isinstance(exc, TritonError):
                reason, code = str(exc), exc.code
            else:
                reason, code = f"{type(exc).__name__}: {exc}", Code.INTERNAL
            log.error("failed to load '%s' version %d: %s: %s", source.key, version,
                      code.status_text, reason)
            return reason
        if self._summary_quantiles is not None:
            model.statistics.summaries = LatencySummaries(self._summary_quantiles)
        model.statistics.namespace = source.namespace
        return model

    def _load_ensemble(
        self, config: mc.ModelConfig, version: int, source: ModelSource
    ) -> EnsembleModel:
        if self._server is None:
            raise TritonError.internal(f"ensemble '{config.name}' needs a server to run on")
        model = EnsembleModel.load_ensemble(
            config, version, source.path, self._composing_configs, self._server,
            self._response_cache,
        )
        # An output without labels of its own classifies with those of the step output that
        # writes it, as Triton's life cycle gives them to a new ensemble.
        unlabeled = {output.name for output in config.output if not model.labels.get(output.name)}
        for step in config.ensemble_scheduling.step:
            for step_output, tensor in step.output_map.items():
                if tensor in unlabeled:
                    labels = self.get(_step_key(step), step.model_version).labels.get(step_output)
                    if labels:
                        model.labels[tensor] = labels
        return model

    def _composing_configs(self, config: mc.ModelConfig) -> dict[str, mc.ModelConfig]:
        """Each step model's final configuration (the model repository manager loads composing
        models before their ensembles); a step model that is not ready makes the ensemble fail
        to load, in Triton's words."""
        keys = {step.model_name: _step_key(step) for step in config.ensemble_scheduling.step}
        states = self.status()
        missing = [name for name, key in sorted(keys.items()) if key not in states]
        if missing:
            raise TritonError.invalid_arg(
                f"ensemble {config.name} contains models that are not available or ambiguous: "
                + ", ".join(missing)
            )
        configs: dict[str, mc.ModelConfig] = {}
        for step in config.ensemble_scheduling.step:
            name, version = step.model_name, step.model_version
            versions = states[keys[name]]
            if not any(s.state is ModelReadyState.READY for s in versions.values()):
                failures = "".join(
                    f"version {v} is at {s.state.value} state: {s.reason};"
                    for v, s in sorted(versions.items())
                )
                raise TritonError.invalid_arg(
                    f"ensemble '{config.name}' depends on '{name}' which has no loaded version. "
                    f"Model '{name}' loading failed with error: {failures}"
                )
            try:
                configs[name] = self.get(keys[name], version).config
            except TritonError:
                raise TritonError.invalid_arg(
                    f"ensemble '{config.name}' depends on '{name}' whose required version "
                    f"{version} is not loaded"
                ) from None
        return configs

    def _swap(
        self,
        name: str,
        old: dict[int, VersionStatus],
        loaded: dict[int, LoadedModel],
        stamps: dict[int, LoadStamp],
    ) -> None:
        """Put the newly loaded versions in service at once, retire what they replace (a
        version updated in place replaces nothing: it is the one serving) and the READY
        versions the load did not select."""
        retired: list[VersionStatus] = []
        with self._lock:
            current: dict[int, VersionStatus] = {}
            for version, model in loaded.items():
                previous = old.get(version)
                current[version] = VersionStatus(version, ModelReadyState.READY, "", model,
                                                 stamps[version])
                if previous is not None and previous.state is ModelReadyState.READY \
                        and previous.model is not model:
                    retired.append(previous)
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

    def _abandon(
        self,
        name: str,
        old: dict[int, VersionStatus],
        outcome: dict[int, LoadedModel | str],
        stamps: dict[int, LoadStamp],
        updated: set[int],
    ) -> None:
        """A load in which some version failed (Triton's OnLoadFinal): release the versions it
        loaded (UNLOADING, then UNAVAILABLE "unloaded"), leave every version that served before
        it serving, and show why each failed version is not. A version updated in place was
        serving and serves on, with its new instances if the update went through."""
        released: list[VersionStatus] = []
        with self._lock:
            current = {v: s for v, s in old.items() if v >= 0 and v not in outcome}
            for version, result in outcome.items():
                previous = old.get(version)
                serving = previous if previous is not None and \
                    previous.state is ModelReadyState.READY else None
                if isinstance(result, str):
                    current[version] = serving or VersionStatus(
                        version, ModelReadyState.UNAVAILABLE, result)
                elif version in updated:
                    current[version] = VersionStatus(version, ModelReadyState.READY, "", result,
                                                     stamps[version])
                else:
                    unloading = VersionStatus(version, ModelReadyState.UNLOADING, "", result)
                    released.append(unloading)
                    current[version] = serving or unloading
            self._models[name] = current
        for status in released:
            self._retire(name, status)

    def _retire(self, name: str, status: VersionStatus) -> None:
        """Unload a replaced or dropped version once its in-flight requests are done."""
        model = status.model
        assert model is not None
        self._agents_hear_unload(model)
        model.retire()

        def unload() -> None:
            model.unload(None)
            log.info("successfully unloaded '%s' version %d", name, status.version)
            self._agents_hear_unloaded(model)
            with self._lock:
                versions = self._models.get(name, {})
                entry = versions.get(status.version)
                if entry is not None and entry.model is model:
                    versions[status.version] = _unloaded(status.version)

        thread = threading.Thread(target=unload, name=f"retire-{name}", daemon=True)
        with self._lock:
            self._retiring = [t for t in self._retiring if t.is_alive()] + [thread]
        thread.start()

    def mark_unavailable(self, name: str, reason: str, versions: list[int] | None = None, *,
                         model_name: str = "") -> None:
        """Record a model that could not even start loading (bad config, unknown name);
        `name` is its identifier, `model_name` its name when they differ."""
        with self._model_lock(name):
            with self._lock:
                self._names[name] = model_name or name
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

    def get(self, name: str, version: int = -1) -> LoadedModel:
        """The READY model version serving requests for (name, version); -1 means the newest."""
        with self._lock:
            versions = self._models.get(name)
            if not versions:
                raise TritonError.not_found(f"Request for unknown model: '{name}' is not found")
            if version == -1:
                newest = None
                for candidate in versions.values():
                    if candidate.state is ModelReadyState.READY and (
                            newest is None or candidate.version > newest.version):
                        newest = candidate
                if newest is None:  # NOT_FOUND (404), as Triton 2.51 answers an unloaded model
                    raise TritonError.not_found(
                        f"Request for unknown model: '{name}' has no available versions"
                    )
                assert newest.model is not None  # a READY version holds its model
                return newest.model
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
            assert status.model is not None  # a READY version holds its model
            return status.model

    def identifiers(self, name: str, *, live: bool = True) -> list[str]:
        """The identifiers of the models named `name`; `live`: only those tried and not
        unloaded since (Triton's global map: what a request for the name may mean)."""
        with self._lock:
            return sorted(
                key for key, model_name in self._names.items() if model_name == name and (
                    not live or any(s.reason != "unloaded"
                                    for s in self._models.get(key, {}).values())))

    def status(self) -> dict[str, dict[int, VersionStatus]]:
        """A copy of every model's version states, for the model table, readiness and index."""
        with self._lock:
            return {
                name: {
                    v: VersionStatus(s.version, s.state, s.reason, s.model, s.stamp)
                    for v, s in versions.items()
                }
                for name, versions in self._models.items()
            }

    # -- unloading ---------------------------------------------------------------------------

    def unload(self, name: str) -> None:
        """Unload every version of `name` once its in-flight requests finish (blocks)."""
        with self._model_lock(name):
            log.debug("AsyncUnload() '%s'", name)
            with self._lock:
                versions = self._models.get(name, {})
                targets = [s for s in versions.values() if s.state is ModelReadyState.READY]
                for status in targets:
                    versions[status.version] = VersionStatus(
                        status.version, ModelReadyState.UNLOADING, "", status.model
                    )
            for status in targets:
                assert status.model is not None
                self._agents_hear_unload(status.model)
            for status in targets:
                assert status.model is not None
                status.model.unload(None)
                log.info("successfully unloaded '%s' version %d", name, status.version)
                self._update(name, _unloaded(status.version))
                self._agents_hear_unloaded(status.model)

    def mark_removed(self, name: str) -> None:
        """`name`'s directory left the repository (POLL) and its loaded versions are unloaded:
        every version it has left shows "unloaded", so that a request for it hears it has no
        available versions, as in Triton, and a version that had failed no longer holds the
        server's readiness back."""
        with self._model_lock(name), self._lock:
            versions = self._models.get(name, {})
            for version in versions:
                versions[version] = _unloaded(version)

    def fail_queued(self) -> None:
        """The server is exiting: every loaded version answers its queued requests
        UNAVAILABLE and takes no more; their executions go on."""
        for _, model in self._serving():
            model.fail_queued()

    def drain(self, deadline: float) -> None:
        """The server is exiting: the models' schedulers stop taking new work; wait until no
        loaded version has a request in flight or a sequence open, logging them each second as
        Triton does, until `deadline` (time.monotonic()); then answer those still queued
        UNAVAILABLE."""
        for _, model in self._serving():
            model.stop_accepting()
        report_at = 0.0
        while True:
            busy = [(name, model.version, pending) for name, model in sorted(
                self._serving(), key=lambda entry: (entry[0], entry[1].version))
                if (pending := model.pending_at_exit())]
            now = time.monotonic()
            if not busy:
                return
            if now >= deadline:
                self.fail_queued()
                return
            if now >= report_at:
                log.info("Timeout %d: Found %d model versions that have in-flight inferences",
                         int(deadline - now), len(busy))
                for name, version, count in busy:
                    log.info("Model '%s' (version %d) has %d in-flight inferences", name,
                             version, count)
                report_at = now + 1.0
            time.sleep(_DRAIN_POLL_S)

    def _serving(self) -> list[tuple[str, LoadedModel]]:
        """Every READY version's model, with its model's name."""
        with self._lock:
            return [(name, s.model) for name, versions in self._models.items()
                    for s in versions.values()
                    if s.state is ModelReadyState.READY and s.model is not None]

    def unload_all(self, timeout: float | None = None) -> None:
        """The server is exiting: fail every request still queued, then unload every loaded
        version once its executions finish, all within `timeout` (--exit-timeout-secs)."""
        deadline = None if timeout is None else time.monotonic() + timeout

        def remaining() -> float | None:
            return None if deadline is None else max(deadline - time.monotonic(), 0.0)

        with self._lock:
            targets = [
                (name, s)
                for name, versions in self._models.items()
                for s in versions.values()
                if s.state is ModelReadyState.READY and s.model is not None
            ]
            for _, status in targets:
                status.state = ModelReadyState.UNLOADING
            loading = sorted({name for name, versions in self._models.items()
                              for s in versions.values() if s.state is ModelReadyState.LOADING})
            retiring = list(self._retiring)
        for name in sorted({name for name, _ in targets}):
            log.debug("AsyncUnload() '%s'", name)
        for _, status in targets:
            assert status.model is not None
            status.model.fail_queued()

        def unload(name: str, status: VersionStatus) -> None:
            assert status.model is not None
            self._agents_hear_unload(status.model)
            status.model.unload(remaining())
            self._update(name, _unloaded(status.version))
            log.info("successfully unloaded '%s' version %d", name, status.version)
            self._agents_hear_unloaded(status.model)

        def unload_when_loaded(name: str) -> None:
            """A load still running finishes first (within the timeout), then what it
            loaded unloads, as Triton's exit waits for a load in progress."""
            left = remaining()
            lock = self._model_lock(name)
            if not lock.acquire(timeout=-1 if left is None else left):
                return  # the exit gives up on it
            try:
                with self._lock:
                    late = [s for s in self._models.get(name, {}).values()
                            if s.state is ModelReadyState.READY and s.model is not None]
                    for status in late:
                        status.state = ModelReadyState.UNLOADING
            finally:
                lock.release()
            if late:
                log.debug("AsyncUnload() '%s'", name)
            for status in late:
                unload(name, status)

        # Side by side, as Triton unloads its models: the exit timeout bounds them all, not
        # each. Daemon threads: one left behind by a server that gave up waiting (an execution
        # past the timeout) must not hold the interpreter's exit.
        threads = [threading.Thread(target=unload, args=(name, s), daemon=True,
                                    name=f"unload-{name}") for name, s in targets]
        threads += [threading.Thread(target=unload_when_loaded, args=(name,), daemon=True,
                                     name=f"unload-{name}") for name in loading]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for thread in retiring:
            thread.join(remaining())
        self._pool.shutdown(wait=True)

    # -- repository agents -------------------------------------------------------------------

    def _agents_hear_unload(self, model: LoadedModel) -> None:
        with self._lock:
            agents = self._agents.get(id(model))
        if agents is not None:
            agents.unloading()

    def _agents_hear_unloaded(self, model: LoadedModel) -> None:
        with self._lock:
            agents = self._agents.pop(id(model), None)
        if agents is not None:
            agents.unloaded(model)

    # -- state updates -----------------------------------------------------------------------

    def _update(self, name: str, status: VersionStatus) -> None:
        with self._lock:
            self._models.setdefault(name, {})[status.version] = status


def _updatable(serving: VersionStatus | None, stamp: LoadStamp) -> bool:
    """Whether a reload from `stamp` may update the serving version's instances in place:
    a backend's model (not an ensemble) whose files and configuration but for its instance
    groups are as it was loaded from."""
    return (serving is not None and serving.state is ModelReadyState.READY
            and isinstance(serving.model, TritonModel) and serving.stamp is not None
            and serving.stamp.updatable_to(stamp.config, stamp.files))


def _failed_state(version: int, updated: set[int]) -> ModelReadyState:
    """The state Triton's load error gives a failed version: one whose in-place update failed
    still serves (READY); one that failed to load is UNAVAILABLE."""
    return ModelReadyState.READY if version in updated else ModelReadyState.UNAVAILABLE


def _step_key(step: mc.ModelEnsembling.Step) -> str:
    """The identifier of the model an ensemble step runs (its namespace is set only with
    namespacing)."""
    return model_identifier(step.model_namespace, step.model_name)


def _unloaded(version: int) -> VersionStatus:
    return VersionStatus(version, ModelReadyState.UNAVAILABLE, "unloaded")
