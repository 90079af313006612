"""The state of every model version the server knows (Triton's ModelLifeCycle map of
ModelInfo, each version with its ModelReadyState and reason), and the moves between states.

A version goes LOADING -> READY, or -> UNAVAILABLE with the reason; UNLOADING ->
UNAVAILABLE ("unloaded") once unloaded. A load's versions go into service together (`swap`),
or, if one failed, what served before serves on (`abandon`). Requests find their READY
version here (`get`), and the model table, readiness and the index read a copy (`status`).
Its own module because these moves are the life cycle's bookkeeping, kept apart from the
threads that load, retire and unload the models (lifecycle.py): every move happens here, under
one lock, and returns what the caller must then load, retire or unload.
"""

from __future__ import annotations

import threading

from ..errors import TritonError
from ..model import LoadedModel
from .model_timestamp import LoadStamp
from .ready_state import ModelReadyState, VersionStatus


class VersionStates:
    """Every model's versions by identifier, each with its state, reason and model."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # identifier -> version -> status; version -1 stands for "no version could be
        # determined".
        self._models: dict[str, dict[int, VersionStatus]] = {}
        # identifier -> the model's name (they differ only with namespacing).
        self._names: dict[str, str] = {}

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

    def serving(self) -> list[tuple[str, LoadedModel]]:
        """Every READY version's model, with its model's name."""
        with self._lock:
            return [(name, s.model) for name, versions in self._models.items()
                    for s in versions.values()
                    if s.state is ModelReadyState.READY and s.model is not None]

    # -- loading -----------------------------------------------------------------------------

    def name(self, name: str, model_name: str) -> None:
        """`name` is the identifier of a model named `model_name`."""
        with self._lock:
            self._names[name] = model_name

    def begin_load(self, name: str, versions: list[int]) -> dict[int, VersionStatus]:
        """`versions` of `name` are LOADING (a READY one serves on meanwhile); the states
        before."""
        with self._lock:
            old = dict(self._models.get(name, {}))
            current = self._models.setdefault(name, {})
            for v in versions:
                if v not in current or current[v].state is not ModelReadyState.READY:
                    current[v] = VersionStatus(v, ModelReadyState.LOADING)
        return old

    def swap(
        self,
        name: str,
        old: dict[int, VersionStatus],
        loaded: dict[int, LoadedModel],
        stamps: dict[int, LoadStamp],
    ) -> list[VersionStatus]:
        """Put the newly loaded versions in service at once; the versions to retire: those
        they replace (a version updated in place replaces nothing: it is the one serving)
        and the READY versions the load did not select."""
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
        return retired

    def abandon(
        self,
        name: str,
        old: dict[int, VersionStatus],
        outcome: dict[int, LoadedModel | str],
        stamps: dict[int, LoadStamp],
        updated: set[int],
    ) -> list[VersionStatus]:
        """A load in which some version failed (Triton's OnLoadFinal): every version that
        served before it serves on, and each failed version shows why it is not; the versions
        it loaded, to release (UNLOADING, then UNAVAILABLE "unloaded"). A version updated in
        place was serving and serves on, with its new instances if the update went through."""
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
        return released

    def fail_unloaded(self, name: str, reason: str, versions: list[int]) -> None:
        """A model that failed before any version loaded; versions still serving keep serving."""
        with self._lock:
            current = self._models.get(name, {})
            if any(s.state is ModelReadyState.READY for s in current.values()):
                return
            self._models[name] = {
                v: VersionStatus(v, ModelReadyState.UNAVAILABLE, reason)
                for v in versions[-1:] or [-1]
            }

    # -- unloading ---------------------------------------------------------------------------

    def begin_unload(self, name: str) -> list[VersionStatus]:
        """`name`'s READY versions are UNLOADING; those versions (as they were)."""
        with self._lock:
            versions = self._models.get(name, {})
            targets = [s for s in versions.values() if s.state is ModelReadyState.READY]
            for status in targets:
                versions[status.version] = VersionStatus(
                    status.version, ModelReadyState.UNLOADING, "", status.model
                )
        return targets

    def begin_exit(self) -> tuple[list[tuple[str, VersionStatus]], list[str]]:
        """The server is exiting: every READY version is UNLOADING. -> (those versions with
        their models' identifiers, the identifiers of the models still LOADING)."""
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
        return targets, loading

    def begin_exit_of(self, name: str) -> list[VersionStatus]:
        """The server is exiting and a load of `name` has finished: the versions it made READY
        are UNLOADING; those versions."""
        with self._lock:
            late = [s for s in self._models.get(name, {}).values()
                    if s.state is ModelReadyState.READY and s.model is not None]
            for status in late:
                status.state = ModelReadyState.UNLOADING
        return late

    def unloaded(self, name: str, version: int) -> None:
        """`name`'s `version` is unloaded."""
        with self._lock:
            self._models.setdefault(name, {})[version] = _unloaded(version)

    def retired(self, name: str, version: int, model: LoadedModel) -> None:
        """A retired `model` is unloaded: its version shows "unloaded", unless another model
        serves that version by now."""
        with self._lock:
            versions = self._models.get(name, {})
            entry = versions.get(version)
            if entry is not None and entry.model is model:
                versions[version] = _unloaded(version)

    def removed(self, name: str) -> None:
        """`name`'s directory left the repository: every version it has left shows
        "unloaded"."""
        with self._lock:
            versions = self._models.get(name, {})
            for version in versions:
                versions[version] = _unloaded(version)


def _unloaded(version: int) -> VersionStatus:
    return VersionStatus(version, ModelReadyState.UNAVAILABLE, "unloaded")
