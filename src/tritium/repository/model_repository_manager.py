"""ModelRepositoryManager (Triton's class of that name): the model control modes and the
repository extension's load/unload/index.

NONE loads every model once at start-up and refuses load/unload requests; POLL does the same,
then picks up new, changed and removed models (repository/poller.py calls `poll`); EXPLICIT
loads only `--load-model` names at start-up and what load requests ask for. In every mode an
ensemble's composing models load before it, and an ensemble whose composing model is missing
or failed is refused with Triton's reason (load_by_dependency, on the dependency graph). How a
model is read from its repository for a load is model_info's.

At start-up and when polling, a model whose configuration does not parse or validate stays
unknown, as in Triton's Poll: the log says why, and the model takes no part in readiness (a
load request for it records the reason as the model's state instead: docs/differences.md). A
name found in two repositories cannot load; the index shows it UNAVAILABLE with Triton's reason.

With --model-namespacing each repository is a namespace: models are known by their identifiers
(scanner.model_identifier), a load or unload request for a name acts on every model of that
name, a request for a name served by several models is refused as ambiguous (`identify`), and
an ensemble's steps go to the model in its own namespace, else to the only one of that name
(model_info links them); a poll that changes which model that is reloads the ensemble (`_relinked`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tritonclient.grpc import model_config_pb2 as mc

from ..config import model_config_from_json
from ..errors import TritonError
from .dependency_graph import DependencyGraph
from .lifecycle import ModelLifeCycle
from .load_by_dependency import DependencyLoader
from .load_overrides import FILE_PREFIX, OverrideDirectory, check_model_name, inside
from .model_info import ModelInfoReader
from .model_timestamp import fingerprint
from .ready_state import ModelReadyState
from .repo_agents import DEFAULT_REPOAGENT_DIRECTORY
from .scanner import (
    IDENTIFIER_SEPARATOR,
    ModelSource,
    RepositoryScan,
    RepositoryScanner,
    model_identifier,
)

log = logging.getLogger("tritium.repository")

NOT_ALLOWED = "explicit model load / unload is not allowed if polling is enabled"
_LIVE = (ModelReadyState.READY, ModelReadyState.LOADING)


class ModelRepositoryManager:
    def __init__(
        self,
        repository: RepositoryScanner,
        lifecycle: ModelLifeCycle,
        *,
        mode: str,
        thread_count: int = 4,
        repoagent_directory: Path = DEFAULT_REPOAGENT_DIRECTORY,
    ) -> None:
        self.repository = repository
        self.lifecycle = lifecycle
        self.mode = mode
        self.graph = DependencyGraph()
        self._reader = ModelInfoReader(repository, lifecycle, self.graph, repoagent_directory)
        self._loader = DependencyLoader(lifecycle, self.graph, self._reader, thread_count)
        # Models loaded from override files: their private directory, removed when replaced.
        self._overrides: dict[str, OverrideDirectory] = {}
        # Models serving a load request's `config`, with their repository folder's fingerprint
        # then: a plain load leaves them as they are while that folder is unchanged (2.51).
        self._config_overridden: dict[str, tuple] = {}
        # POLL: what each model directory looked like when last loaded.
        self._fingerprints: dict[str, tuple] = {}
        self._lock = threading.Lock()
        # Load requests in progress (their composing models included), as Triton's dependency
        # graph locks its nodes: an unload touching one waits for it (LoadUnloadModels' conflict).
        self._loading: dict[str, int] = {}
        self._loading_cv = threading.Condition()

    # -- start-up ----------------------------------------------------------------------------

    def start(self, names: list[str] | None) -> list[str]:
        """Load `names` (all models when None) with their composing models; the errors."""
        scan = self.repository.scan()
        if names is None:
            wanted = sorted(set(scan.models) | set(scan.errors))
        else:
            wanted = [key for name in names for key in self._identifiers(scan, name)]
        errors = _log_duplicates(scan, wanted)
        configs = {}
        for name in wanted:
            if name in scan.errors:
                continue
            if name not in scan.models:
                log.error("failed to poll model '%s': model not found in any model repository.",
                          name)
                reason = f"model '{name}' is not found in the model repository"
                self.lifecycle.mark_unavailable(name, reason)
                errors.append(reason)
                continue
            polled = self._reader.for_poll(scan, scan.models[name])
            if polled is not None:
                configs[name] = polled
            else:
                errors.append(f"failed to load '{name}'")
        if self.mode == "poll":
            self._fingerprints = {n: fingerprint(s.path) for n, s in scan.models.items()}
        errors += self._loader.load_many(scan, configs, set(wanted))
        return errors

    # -- load and unload requests -------------------------------------------------------------

    def load(self, name: str, parameters: dict[str, Any]) -> None:
        """A load request: load or reload `name` (with its composing models); blocks."""
        if self.mode != "explicit":
            raise TritonError.unavailable(NOT_ALLOWED)
        check_model_name(name)
        config_json = parameters.get("config")
        files = {k: v for k, v in parameters.items() if k.startswith(FILE_PREFIX)}
        if files and config_json is None:
            raise _poll_failed(name, "file overrides need the 'config' parameter")
        override = OverrideDirectory(name, files) if files else None
        try:
            scan = self.repository.scan()
            if override is not None:
                sources = [ModelSource(name, override.path, override.root)]
            else:
                sources = self._repository_sources(scan, name)
            override_config = None
            if config_json is not None:
                try:
                    override_config = model_config_from_json(config_json)
                except TritonError as exc:
                    # The client hears only Triton's answer; the log says why.
                    log.error("Poll failed for model directory '%s': Invalid config override: "
                              "%s", name, exc.message)
                    raise _poll_failed(name) from None  # Triton's answer to a bad config JSON
            failures: list[TritonError] = []
            for source in sources:  # more than one only with namespacing
                try:
                    self._load_source(scan, source, override_config)
                except TritonError as exc:
                    failures.append(exc)
            if len(failures) == 1:
                raise failures[0]
            if failures:
                raise TritonError.invalid_arg("".join(f.message for f in failures))
        except BaseException:
            if override is not None:
                if self._serves_from(name, override):
                    self._keep_override(name, override)
                else:
                    override.remove()
            raise
        self._keep_override(name, override)

    def _load_source(self, scan: RepositoryScan, source: ModelSource,
                     override_config: mc.ModelConfig | None) -> None:
        """One model of a load request: load or reload it from `source`, with the request's
        configuration if it gave one."""
        with self._loading_cv:
            self._loading[source.key] = self._loading.get(source.key, 0) + 1
        try:
            self._load_source_now(scan, source, override_config)
        finally:
            with self._loading_cv:
                self._loading[source.key] -= 1
                if not self._loading[source.key]:
                    del self._loading[source.key]
                self._loading_cv.notify_all()

    def _load_source_now(self, scan: RepositoryScan, source: ModelSource,
                         override_config: mc.ModelConfig | None) -> None:
        key = source.key
        if override_config is None and self._keeps_config_override(key, source):
            return
        if override_config is not None:
            override_config = mc.ModelConfig.FromString(override_config.SerializeToString())
        try:
            polled = self._reader.read(scan, source, override_config)
        except TritonError as exc:
            self._reader.record_error(source, exc.message)
            raise _poll_failed(source.name, exc.message) from None
        self._loader.load_tree(scan, key, polled, set(), set())
        with self._lock:
            if override_config is None:
                self._config_overridden.pop(key, None)
            else:
                self._config_overridden[key] = fingerprint(source.path)

    def register_repository(self, repository: str | Path,
                            mapping: list[tuple[str, str]]) -> None:
        """Add a model repository (EXPLICIT mode); `mapping`: (directory, model name) pairs."""
        if self.mode != "explicit":
            raise TritonError.unsupported(
                "repository registration is not allowed if model control mode is not EXPLICIT")
        with self._lock:
            self.repository.register(repository, mapping)
        log.info("Model repository registered: %s", repository)

    def unregister_repository(self, repository: str | Path) -> None:
        """Remove a model repository (EXPLICIT mode); what it loaded stays loaded."""
        if self.mode != "explicit":
            raise TritonError.unsupported(
                "repository unregistration is not allowed if model control mode is not "
                "EXPLICIT")
        with self._lock:
            self.repository.unregister(repository)
        log.info("Model repository unregistered: %s", repository)

    def unload(self, name: str, unload_dependents: bool) -> None:
        """An unload request: `name`, the loaded ensembles that use it and, with
        `unload_dependents`, the composing models no other loaded ensemble uses."""
        if self.mode != "explicit":
            raise TritonError.unavailable(NOT_ALLOWED)
        check_model_name(name)
        keys = self.lifecycle.identifiers(name, live=False) if self.repository.namespacing \
            else []
        for key in keys or [name]:
            self._unload(key, unload_dependents)

    def identify(self, name: str, namespace: str = "") -> str:
        """The identifier of the model a request for `name` means (Triton's
        FindModelIdentifier): the name itself without namespacing; with it, the model of that
        name in `namespace` (an ensemble step's), else the only model of that name the server
        knows (tried and not unloaded). Several: TritonError INVALID_ARG, Triton's answer."""
        if not self.repository.namespacing:
            return name
        if namespace:
            return model_identifier(namespace, name)
        keys = self.lifecycle.identifiers(name)
        if len(keys) > 1:
            raise TritonError.invalid_arg(
                f"There are {len(keys)} identifiers of model '{name}' in global map, model "
                "namespace must be provided to resolve ambiguity.")
        if not keys and IDENTIFIER_SEPARATOR in name:
            # A client's name that spells an identifier ("<repository>::<model>") must not
            # reach that model, nor tell by its answer whether the repository exists.
            raise TritonError.not_found(f"Request for unknown model: '{name}' is not found")
        return keys[0] if keys else name

    def _unload(self, name: str, unload_dependents: bool) -> None:
        with self._loading_cv:
            self._loading_cv.wait_for(lambda: not any(
                key in self._loading for key in [name, *self.graph.users(name)]))
        loaded = self._loaded_names()
        targets = [u for u in self.graph.users(name) if u in loaded] + [name]
        if unload_dependents:
            for dependency in self.graph.composing_closure(name):
                if dependency in targets:
                    continue
                users = self.graph.users(dependency)
                if not [u for u in users if u in loaded and u not in targets]:
                    targets.append(dependency)
        for target in targets:
            self.lifecycle.unload(target)
            self._keep_override(target, None)
            with self._lock:
                self._config_overridden.pop(target, None)

    # -- repository index ----------------------------------------------------------------------

    def index(self, ready_only: bool) -> list[dict[str, str]]:
        """Every model of the repositories, with each version's state and reason if it has one."""
        scan = self.repository.scan()
        states = self.lifecycle.status()
        entries: list[dict[str, str]] = []
        for key in sorted(set(scan.models) | set(scan.errors)):
            if key in scan.errors:  # Triton lists such a name even in a ready-only index
                entries.append({"name": key, "state": ModelReadyState.UNAVAILABLE.value,
                                "reason": scan.errors[key]})
                continue
            name = scan.models[key].name  # a namespace is not shown, as in Triton's index
            versions = states.get(key)
            if not versions:
                if not ready_only:
                    entries.append({"name": name})
                continue
            for version, status in sorted(versions.items()):
                if ready_only and status.state is not ModelReadyState.READY:
                    continue
                entry = {"name": name}
                if version >= 0:
                    entry["version"] = str(version)
                entry["state"] = status.state.value
                if status.reason:
                    entry["reason"] = status.reason
                entries.append(entry)
        return entries

    # -- POLL ------------------------------------------------------------------------------------

    def poll(self) -> None:
        """Load new models, reload changed ones, unload removed ones (POLL mode)."""
        scan = self.repository.scan()
        seen = {name: fingerprint(source.path) for name, source in scan.models.items()}
        with self._lock:
            known = dict(self._fingerprints)
            self._fingerprints = seen
        _log_duplicates(scan, scan.errors)
        changed = [n for n in sorted(seen) if known.get(n) != seen[n]]
        configs = {}
        # Read first, so that the graph no longer ties them to a model removed below.
        relinked = [n for n in self._relinked(scan) if n not in changed]
        for name in relinked:
            log.info("ensemble '%s' now links other composing models: reloading it", name)
            polled = self._reader.for_poll(scan, scan.models[name])
            if polled is not None:
                configs[name] = polled
        for name in sorted(set(known) - set(seen)):
            # Unloaded, not forgotten, as in Triton: a request for it hears that it has no
            # available versions; the index lists only what the repositories hold.
            log.info("model '%s' was removed from the repository: unloading it", name)
            self._unload(name, False)  # with the ensembles that use it
            self.lifecycle.mark_removed(name)
            self.graph.remove(name)
        for name in changed:
            log.info("model '%s' is new or changed: loading it", name)
            polled = self._reader.for_poll(scan, scan.models[name])
            if polled is not None:
                configs[name] = polled
        self._loader.load_many(scan, configs, set(changed) | set(relinked))

    def _relinked(self, scan: RepositoryScan) -> list[str]:
        """With namespacing, the ensembles whose steps would now link other models than they
        do (one of that name appeared in the ensemble's namespace, or the one linked is gone
        and another is now the only one of its name): Triton re-connects and reloads them."""
        if not self.repository.namespacing:
            return []
        found = []
        for key in self.graph.ensembles():
            source = scan.models.get(key)
            if source is None:
                continue
            if self._reader.link_steps(scan, source, self.graph.steps(key)) != self.graph.uses(key):
                found.append(key)
        return found

    def _identifiers(self, scan: RepositoryScan, name: str) -> list[str]:
        """What loading `name` loads: the model of that name, or with namespacing every one
        (the name itself when there is none, to be reported)."""
        if not self.repository.namespacing:
            return [name]
        return [source.key for source in scan.named(name)] or [name]

    def _repository_sources(self, scan: RepositoryScan, name: str) -> list[ModelSource]:
        """The models a load request for `name` loads (several only with namespacing)."""
        if name in scan.errors:  # Triton's answer; why goes to the log
            _log_duplicates(scan, [name])
            raise _poll_failed(name)
        sources = [scan.models[key] for key in self._identifiers(scan, name)
                   if key in scan.models]
        if not sources:
            log.error("load request for '%s' refused: no model folder of that name in the "
                      "model repositories", name)
            raise _poll_failed(name)
        for source in sources:
            if not inside(source.path, source.repository):
                raise TritonError.invalid_arg(
                    f"invalid model name '{name}': the model directory leaves the model "
                    "repository")
        return sources

    def _keeps_config_override(self, name: str, source: ModelSource) -> bool:
        """Whether a plain load of `name` leaves it serving the `config` a load gave it:
        Triton 2.51 keeps it while the model's folder is unchanged."""
        with self._lock:
            kept = self._config_overridden.get(name)
        return (kept is not None and name in self._loaded_names()
                and kept == fingerprint(source.path))

    def _keep_override(self, name: str, override: OverrideDirectory | None) -> None:
        """Remember the directory `name` now loads from; remove the one it replaced."""
        with self._lock:
            previous = self._overrides.pop(name, None)
            if override is not None:
                self._overrides[name] = override
        if previous is not None and previous is not override:
            previous.remove()

    def _serves_from(self, name: str, override: OverrideDirectory) -> bool:
        """Whether a version of `name` loaded from `override` serves (a partly failed load)."""
        serving = self.lifecycle.status().get(name, {}).values()
        return any(
            s.model is not None and inside(s.model.repository_path, override.root)
            for s in serving
            if s.state is ModelReadyState.READY
        )

    def remove_overrides(self) -> None:
        with self._lock:
            overrides, self._overrides = list(self._overrides.values()), {}
        for override in overrides:
            override.remove()

    def _loaded_names(self) -> set[str]:
        return {
            name
            for name, versions in self.lifecycle.status().items()
            if any(s.state in _LIVE for s in versions.values())
        }


def _log_duplicates(scan: RepositoryScan, names: Iterable[str]) -> list[str]:
    """Log, in Triton's words, each of `names` found in two or more repositories (it cannot
    load); the reasons."""
    duplicates = [name for name in names if name in scan.errors]
    for name in duplicates:
        log.error("failed to poll model '%s': not unique across all model repositories", name)
    return [scan.errors[name] for name in duplicates]


def _poll_failed(name: str, detail: str = "") -> TritonError:
    """Triton's answer when a load request's model cannot be read; Tritium adds why."""
    message = f"failed to load '{name}', failed to poll from model repository"
    return TritonError.internal(f"{message}: {detail}" if detail else message)

