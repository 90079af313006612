"""RepositoryScanner: what the model repositories hold.

It scans every `--model-repository` (and those registered later, Triton's
TRITONSERVER_ServerRegisterModelRepository) for model directories, reports a name found in two
repositories as an error for that model alone (with --model-namespacing each repository is a
namespace of its own instead: both models exist, each known by its identifier), reads and
normalises each model's configuration, and picks the versions its version policy serves. A
registration may give directories other names (its name mapping): a mapped directory is known
only by its mapped names, and a mapped name wins over a directory of that name found by the
scan, as in Triton. Loading is ModelLifeCycle's job; deciding what to load (Triton's
ModelRepositoryManager) is `model_repository_manager`'s.

A repository on cloud storage (`s3://`, `gs://`) is scanned through its localized copy
(cloud.CloudRepository), brought up to date with the bucket before every scan; messages name it
by its URL.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tritonclient.grpc import model_config_pb2 as mc

from ..config import (
    check_directory_name,
    normalize_model_config,
    read_model_config,
    validate_model_config,
    validate_model_io_config,
)
from ..errors import TritonError
from ..gpus import NO_GPUS, GpuInventory
from .cloud import CloudRepository, is_cloud_path

log = logging.getLogger("tritium.repository")

# Triton's MODEL_READY_REASON_DUPLICATE: the index's reason for a name found in two repositories.
DUPLICATE_REASON = "model appears in two or more repositories"
# Folders of a model directory that hold other things than a version.
NOT_VERSIONS = ("warmup", "initial_state", "configs")


# Between a namespace and a name in a model identifier.
IDENTIFIER_SEPARATOR = "::"


def model_identifier(namespace: str, name: str) -> str:
    """Triton's ModelIdentifier as text: the name alone without a namespace (namespacing off,
    where every name is unique), else "<namespace>::<name>". The life cycle and the dependency
    graph know models by it."""
    return f"{namespace}{IDENTIFIER_SEPARATOR}{name}" if namespace else name


@dataclass(frozen=True)
class ModelSource:
    """Where a model lives: its directory inside one repository, and its namespace (the
    repository's path with --model-namespacing, else "")."""

    name: str
    path: Path
    repository: Path
    namespace: str = ""

    @property
    def key(self) -> str:
        """The model's identifier (model_identifier)."""
        return model_identifier(self.namespace, self.name)


@dataclass
class RepositoryScan:
    # Identifier (the name, without namespacing) -> where the model lives.
    models: dict[str, ModelSource]
    # Models that cannot be loaded before even reading a file (e.g. a duplicated name).
    errors: dict[str, str]

    def named(self, name: str) -> list[ModelSource]:
        """Every model of that name (more than one only with namespacing)."""
        return [source for source in self.models.values() if source.name == name]

    def composing_source(self, namespace: str, name: str) -> ModelSource | None:
        """The model an ensemble of `namespace` means by a step's `name`, as Triton links it:
        the one in the ensemble's own namespace, else the only one of that name; None when
        there is none, or several and none in the ensemble's namespace."""
        own = self.models.get(model_identifier(namespace, name))
        if own is not None:
            return own
        candidates = self.named(name)
        return candidates[0] if len(candidates) == 1 else None


class RepositoryScanner:
    def __init__(self, repositories: Sequence[str | Path], *, auto_complete: bool,
                 gpus: GpuInventory = NO_GPUS, config_name: str = "",
                 namespacing: bool = False):
        # Cloud repositories by their local copy's root (none is downloaded before
        # `check_repositories`).
        self.cloud: dict[Path, CloudRepository] = {}
        # Cloud repositories unregistered: their copies may still serve loaded models.
        self._retired: list[CloudRepository] = []
        # A repository given twice is one repository (Triton keeps them in a set), not a reason
        # to find every model in it twice.
        self.repositories = [self._local(r) for r in dict.fromkeys(
            r if isinstance(r, str) and is_cloud_path(r) else Path(r) for r in repositories)]
        self.auto_complete = auto_complete
        self.config_name = config_name  # --model-config-name
        self.gpus = gpus  # where KIND_GPU / KIND_AUTO instances may go
        # --model-namespacing: each repository's models live in a namespace of their own.
        self.namespacing = namespacing
        # Registered name mappings: model name -> where it lives.
        self.mappings: dict[str, ModelSource] = {}

    def _local(self, repository: str | Path) -> Path:
        """Where `repository`'s files are read: itself, or a cloud repository's local copy."""
        if isinstance(repository, Path):
            return repository
        cloud = CloudRepository(repository)
        self.cloud[cloud.root] = cloud
        return cloud.root

    def name_of(self, repository: Path) -> str:
        """The repository as the user named it (a cloud repository's URL)."""
        cloud = self.cloud.get(repository)
        return cloud.url if cloud is not None else str(repository)

    def _find(self, repository: str | Path) -> Path | None:
        """The registered repository named `repository`, if any."""
        for path in self.repositories:
            if self.name_of(path) == str(repository):
                return path
        return None

    def register(self, repository: str | Path, mapping: list[tuple[str, str]]) -> None:
        """Add `repository`; `mapping` is (directory, model name) pairs (Triton's name_mapping:
        one directory may serve under several names)."""
        if isinstance(repository, Path) and not repository.is_dir():
            raise TritonError.invalid_arg(
                f"failed to register '{repository}', repository not found")
        names = [name for _, name in mapping]
        for name in names:
            if names.count(name) > 1:
                raise TritonError.invalid_arg(
                    f"failed to register '{repository}', there is a conflicting mapping for "
                    f"'{name}'")
        if self._find(repository) is not None:
            raise TritonError.already_exists(
                f"model repository '{repository}' has already been registered")
        for name in names:
            if name in self.mappings:
                raise TritonError.already_exists(
                    f"failed to register '{name}', there is a conflicting mapping for '{name}'")
        local = self._local(repository)
        if local in self.cloud:
            try:
                self.cloud[local].refresh()
            except TritonError:
                self.cloud.pop(local).close()
                raise
        self.repositories.append(local)
        for directory, name in mapping:
            self.mappings[name] = ModelSource(name, local / directory, local,
                                              self._namespace(local))

    def unregister(self, repository: str | Path) -> None:
        """Forget `repository` and its mappings (models loaded from it stay loaded)."""
        local = self._find(repository)
        if local is None:
            raise TritonError.invalid_arg(
                f"failed to unregister '{repository}', repository not found")
        self.repositories.remove(local)
        if local in self.cloud:
            self._retired.append(self.cloud.pop(local))
        self.mappings = {name: source for name, source in self.mappings.items()
                         if source.repository != local}

    def check_repositories(self) -> None:
        """TritonError for a repository that cannot be read: a local folder that does not
        exist, a cloud repository whose service refuses (its first download happens here)."""
        for repository in self.repositories:
            cloud = self.cloud.get(repository)
            if cloud is not None:
                cloud.refresh()
            elif not repository.is_dir():
                raise TritonError.invalid_arg(
                    f"failed to stat file {repository}: model repository path does not exist"
                )

    def close(self) -> None:
        """Remove the cloud repositories' local copies (the server is exiting)."""
        for cloud in [*self.cloud.values(), *self._retired]:
            cloud.close()

    def scan(self) -> RepositoryScan:
        found: dict[str, list[ModelSource]] = {}
        mapped = {source.path for source in self.mappings.values()}
        for cloud in list(self.cloud.values()):
            cloud.refresh()
        for repository in self.repositories:
            if not repository.is_dir():
                continue
            for entry in sorted(repository.iterdir()):
                if entry.name.startswith(".") or not entry.is_dir() or entry in mapped:
                    continue
                source = ModelSource(entry.name, entry, repository, self._namespace(repository))
                found.setdefault(source.key, []).append(source)
        models: dict[str, ModelSource] = {}
        errors: dict[str, str] = {}
        for key, sources in found.items():
            if len(sources) > 1:
                errors[key] = DUPLICATE_REASON
            else:
                models[key] = sources[0]
        for source in self.mappings.values():
            errors.pop(source.key, None)
            models[source.key] = source
        return RepositoryScan(models, errors)

    def _namespace(self, repository: Path) -> str:
        """The namespace of `repository`'s models (Triton's: the repository path as given, a
        cloud repository's URL)."""
        return self.name_of(repository) if self.namespacing else ""

    def model_config(
        self, source: ModelSource, override: mc.ModelConfig | None = None
    ) -> mc.ModelConfig:
        """The model's configuration (config.pbtxt, or the `override` a load request gave),
        normalised and validated as Triton does before loading."""
        return self.complete_config(
            self.read_config(source) if override is None else override, source)

    def read_config(self, source: ModelSource) -> mc.ModelConfig:
        """The model's config.pbtxt (or --model-config-name's file) as written."""
        return read_model_config(source.path, auto_complete=self.auto_complete,
                                 config_name=self.config_name)

    def has_config_file(self, source: ModelSource) -> bool:
        """Whether the model has a configuration file (with auto-complete on it need not:
        its backend must then give it one, as Triton's Model::Init requires)."""
        return (source.path / "config.pbtxt").exists() or bool(
            self.config_name
            and (source.path / "configs" / f"{self.config_name}.pbtxt").is_file())

    def complete_config(self, config: mc.ModelConfig, source: ModelSource) -> mc.ModelConfig:
        """`config` (read, or a load request's) normalised for the files at `source` and
        validated, as Triton does before loading."""
        # A model registered under a mapped name takes that name, whatever its config says
        # (Triton renames it so); any other must be named as its directory.
        if not config.name or source.name in self.mappings:
            config.name = source.name
        normalize_model_config(config, source.path, model_name=source.name, check_name=False)
        validate_model_config(config)
        if not self.auto_complete:  # otherwise the backend may still fill inputs and outputs
            validate_model_io_config(config)
        check_directory_name(config, source.name)
        return config

    @staticmethod
    def available_versions(source: ModelSource, *, warn: bool = False) -> list[int]:
        """Integer version folders. Others are ignored, as in Triton, which warns (`warn`: when
        the versions are picked for a load) about a name with a leading zero, which would
        otherwise alias another version, and about one that is no number."""
        versions = []
        for entry in sorted(source.path.iterdir()):
            name = entry.name
            if not entry.is_dir() or name in NOT_VERSIONS:
                continue
            if len(name) > 1 and name.startswith("0"):
                if warn:
                    log.warning("ignore version directory '%s' which contains leading zeros in "
                                "its directory name", name)
            elif name.isascii() and name.isdigit():
                versions.append(int(name))
            elif warn:
                log.warning("ignore version directory '%s' which fails to convert to integral "
                            "number", name)
        return sorted(versions)

    def versions_to_load(self, source: ModelSource, config: mc.ModelConfig) -> list[int]:
        """The versions the model's version policy selects, newest first. A `specific` version
        without its folder is logged and left out, as Triton does: the others still load."""
        available = self.available_versions(source, warn=True)
        policy = config.version_policy
        which = policy.WhichOneof("policy_choice")
        if which == "all":
            chosen = available
        elif which == "specific":
            chosen = []
            for version in dict.fromkeys(policy.specific.versions):
                if version in available:
                    chosen.append(version)
                else:
                    log.error("version %d is specified for model '%s', but the version "
                              "directory is not present", version, config.name)
        else:
            count = policy.latest.num_versions or 1
            chosen = available[-count:]
        if not chosen:
            raise TritonError.invalid_arg(
                f"at least one version must be available under the version policy of model "
                f"'{config.name}'"
            )
        return sorted(chosen, reverse=True)
