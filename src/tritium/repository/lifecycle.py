"""ModelLifeCycle: loads and unloads model versions and tracks their states.

Each version moves LOADING -> READY, or -> UNAVAILABLE with the reason; unloading goes
UNLOADING -> UNAVAILABLE ("unloaded") after its in-flight requests finish. A reload keeps the
old versions serving until the new ones are READY, then swaps them in at once; a load in
which any version fails unloads the versions it loaded and leaves the old ones serving. A
reload that changes only a serving version's instance groups updates its instances in place
instead (model_timestamp says when), as Triton's does. The versions of
one model load on a thread pool of `--model-load-thread-count` threads; replaced versions
retire on threads of their own. The states and their moves are version_states' (VersionStates),
making a version is model_factory's (ModelFactory: TritonModel or EnsembleModel, as Triton's
CreateModel); this module runs them: one load or unload of a model at a time, on its threads,
with the model's repository agents told how it went. Which models
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
from ..errors import TritonError
from ..model import LoadedModel, TritonModel
from ..response_cache import ResponseCache
from ..scheduler import EnsembleServer
from ..scheduler.rate_limiter import RateLimiter
from .model_factory import ModelFactory
from .model_timestamp import LoadStamp, version_fingerprint
from .ready_state import ModelReadyState, VersionStatus
from .repo_agents import RepoAgentModels
from .scanner import ModelSource, RepositoryScanner
from .version_states import VersionStates

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
        self._states = VersionStates()
        self._factory = ModelFactory(
            repository, backends, self._states, response_cache, rate_limiter, server,
            load_retry_count, summary_quantiles,
        )
        self._pool = ThreadPoolExecutor(max(thread_count, 1), thread_name_prefix="model-load")
        self._lock = threading.Lock()
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
            self._states.name(name, source.name)
            try:
                versions = self._repository.versions_to_load(source, config)
            except TritonError as exc:
                self._states.fail_unloaded(name, str(exc),
                                           self._repository.available_versions(source))
                raise
            stamps = {v: LoadStamp(config, version_fingerprint(
                source.path, v, self._repository.config_name)) for v in versions}
            old = self._states.begin_load(name, versions)
            updating = {v for v in versions if _updatable(old.get(v), stamps[v])}
            tasks: list[Callable[[], LoadedModel | str]] = [
                partial(self._factory.update, old[v], config, name) if v in updating
                else partial(self._factory.create, source, config, v, config_provided)
                for v in versions
            ]
            others = [self._pool.submit(task) for task in tasks[1:]]
            results = [tasks[0]()]
            results += [future.result() for future in others]
            outcome = dict(zip(versions, results, strict=True))
            log.debug("OnLoadFinal() '%s' for all version(s)", name)
            failed = {v: r for v, r in outcome.items() if isinstance(r, str)}
            if failed:
                for status in self._states.abandon(name, old, outcome, stamps, updating):
                    self._retire(name, status)
                log.info("failed to load '%s'", name)
                raise TritonError.invalid_arg("".join(
                    f"version {v} is at {_failed_state(v, updating).value} state: {reason};"
                    for v, reason in failed.items()))
            loaded = {v: r for v, r in outcome.items() if isinstance(r, LoadedModel)}
            for status in self._states.swap(name, old, loaded, stamps):
                self._retire(name, status)
            if agents is not None:  # they stay with the versions loaded (not updated) here
                new = [model for v, model in loaded.items() if v not in updating]
                with self._lock:
                    self._agents.update((id(model), agents) for model in new)
                agents.loaded(new)
            log.info("successfully loaded '%s'", name)

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
            self._states.retired(name, status.version, model)

        thread = threading.Thread(target=unload, name=f"retire-{name}", daemon=True)
        with self._lock:
            self._retiring = [t for t in self._retiring if t.is_alive()] + [thread]
        thread.start()

    def mark_unavailable(self, name: str, reason: str, versions: list[int] | None = None, *,
                         model_name: str = "") -> None:
        """Record a model that could not even start loading (bad config, unknown name);
        `name` is its identifier, `model_name` its name when they differ."""
        with self._model_lock(name):
            self._states.name(name, model_name or name)
            self._states.fail_unloaded(name, reason, versions or [])

    def _model_lock(self, name: str) -> threading.Lock:
        """Loads and unloads of one model run one at a time."""
        with self._lock:
            return self._model_locks.setdefault(name, threading.Lock())

    # -- lookup ------------------------------------------------------------------------------

    def get(self, name: str, version: int = -1) -> LoadedModel:
        """The READY model version serving requests for (name, version); -1 means the newest."""
        return self._states.get(name, version)

    def identifiers(self, name: str, *, live: bool = True) -> list[str]:
        """The identifiers of the models named `name`; `live`: only those tried and not
        unloaded since (Triton's global map: what a request for the name may mean)."""
        return self._states.identifiers(name, live=live)

    def status(self) -> dict[str, dict[int, VersionStatus]]:
        """A copy of every model's version states, for the model table, readiness and index."""
        return self._states.status()

    # -- unloading ---------------------------------------------------------------------------

    def unload(self, name: str) -> None:
        """Unload every version of `name` once its in-flight requests finish (blocks)."""
        with self._model_lock(name):
            log.debug("AsyncUnload() '%s'", name)
            targets = self._states.begin_unload(name)
            for status in targets:
                assert status.model is not None
                self._agents_hear_unload(status.model)
            for status in targets:
                assert status.model is not None
                status.model.unload(None)
                log.info("successfully unloaded '%s' version %d", name, status.version)
                self._states.unloaded(name, status.version)
                self._agents_hear_unloaded(status.model)

    def mark_removed(self, name: str) -> None:
        """`name`'s directory left the repository (POLL) and its loaded versions are unloaded:
        every version it has left shows "unloaded", so that a request for it hears it has no
        available versions, as in Triton, and a version that had failed no longer holds the
        server's readiness back."""
        with self._model_lock(name):
            self._states.removed(name)

    def fail_queued(self) -> None:
        """The server is exiting: every loaded version answers its queued requests
        UNAVAILABLE and takes no more; their executions go on."""
        for _, model in self._states.serving():
            model.fail_queued()

    def drain(self, deadline: float) -> None:
        """The server is exiting: the models' schedulers stop taking new work; wait until no
        loaded version has a request in flight or a sequence open, logging them each second as
        Triton does, until `deadline` (time.monotonic()); then answer those still queued
        UNAVAILABLE."""
        for _, model in self._states.serving():
            model.stop_accepting()
        report_at = 0.0
        while True:
            busy = [(name, model.version, pending) for name, model in sorted(
                self._states.serving(), key=lambda entry: (entry[0], entry[1].version))
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

    def unload_all(self, timeout: float | None = None) -> None:
        """The server is exiting: fail every request still queued, then unload every loaded
        version once its executions finish, all within `timeout` (--exit-timeout-secs)."""
        deadline = None if timeout is None else time.monotonic() + timeout

        def remaining() -> float | None:
            return None if deadline is None else max(deadline - time.monotonic(), 0.0)

        targets, loading = self._states.begin_exit()
        with self._lock:
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
            self._states.unloaded(name, status.version)
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
                late = self._states.begin_exit_of(name)
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
