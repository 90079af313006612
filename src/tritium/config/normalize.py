"""Server-side auto-complete and normalization of a model configuration.

A port of Triton core's `GetNormalizedModelConfig` (= `AutoCompleteBackendFields` then
`NormalizeModelConfig`) and `NormalizeInstanceGroup` from `src/model_config_utils.cc`, as
Triton 2.51 behaves. Everything here edits the `ModelConfig` in place.

When each step runs, in Triton's order:
- `normalize_model_config` when the repository is polled, right after the file is read. Triton
  runs it whether or not auto-complete is enabled (checked against Triton 2.51: a config with no
  backend next to `1/model.py` loads as a python model under `--disable-auto-complete-config`).
- `normalize_instance_groups` when a model version is created, after the backend has had its
  chance to auto-complete the config, with the backend's preferred instance groups.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from tritonclient.grpc import model_config_pb2 as mc

from ..errors import TritonError

ENSEMBLE_PLATFORM = "ensemble"
SEQUENCE_IDLE_DEFAULT_MICROSECONDS = 1_000_000

_TF_BACKEND = "tensorflow"
_TF_SAVEDMODEL_PLATFORM, _TF_SAVEDMODEL_FILE = "tensorflow_savedmodel", "model.savedmodel"
_TF_GRAPHDEF_PLATFORM, _TF_GRAPHDEF_FILE = "tensorflow_graphdef", "model.graphdef"

_KIND_AUTO = mc.ModelInstanceGroup.KIND_AUTO
_KIND_CPU = mc.ModelInstanceGroup.KIND_CPU
_KIND_GPU = mc.ModelInstanceGroup.KIND_GPU

# Backends whose CPU instance groups default to two instances (SetDefaultInstanceCount).
_TWO_CPU_INSTANCE_BACKENDS = frozenset({_TF_BACKEND, "onnxruntime"})


@dataclass(frozen=True)
class _BackendRule:
    """How AutoCompleteBackendFields recognises one backend from its platform or file."""

    backend: str
    platform: str  # "" when the backend has no platform name (openvino, python)
    filename: str  # the default model file, also what is looked for in the version folder
    may_be_dir: bool  # ONNX, OpenVINO and Python accept a directory of that name


# Checked in this order, as in Triton; the first backend that matches wins.
_RULES: tuple[_BackendRule, ...] = (
    _BackendRule("tensorrt", "tensorrt_plan", "model.plan", may_be_dir=False),
    _BackendRule("onnxruntime", "onnxruntime_onnx", "model.onnx", may_be_dir=True),
    _BackendRule("openvino", "", "model.xml", may_be_dir=True),
    _BackendRule("pytorch", "pytorch_libtorch", "model.pt", may_be_dir=False),
    _BackendRule("python", "", "model.py", may_be_dir=True),
)


def normalize_model_config(
    config: mc.ModelConfig, model_path: Path, *, model_name: str | None = None,
    check_name: bool = True,
) -> None:
    """Fill what Triton fills before validation, then check the name matches the directory.

    `model_name` is the name the repository knows the model by; it defaults to the directory
    name (it differs only when the files live elsewhere, e.g. a load with override files).
    """
    model_path = Path(model_path)
    name = model_path.name if model_name is None else model_name
    _auto_complete_backend_fields(config, name, model_path)
    _normalize(config)
    if check_name:
        check_directory_name(config, name)


def check_directory_name(config: mc.ModelConfig, name: str) -> None:
    """Triton checks this after ValidateModelConfig (model_repository_manager.cc)."""
    if config.name != name:
        raise TritonError.invalid_arg(
            f"unexpected directory name '{name}' for model '{config.name}', "
            "directory name must equal model name"
        )


def normalize_instance_groups(
    config: mc.ModelConfig,
    preferred_groups: Sequence[mc.ModelInstanceGroup] = (),
    gpus: Collection[int] = (),
) -> None:
    """Triton's NormalizeInstanceGroup: give every group a name, a resolved kind and a count.

    `preferred_groups` are the backend's preferred instance groups (its
    TRITONBACKEND_BackendAttributeAddPreferredInstanceGroup calls); `gpus` are the device ids
    of the GPUs placement may use (Triton's supported GPUs, `tritium.gpus`). Ensembles have no
    instance groups and are left alone.
    """
    if config.HasField("ensemble_scheduling"):
        return
    supported = sorted(gpus)

    if not config.instance_group:
        # One group named after the model (not "<model>_0"), shaped by the first usable
        # preferred group; a KIND_GPU preference is unusable without GPUs.
        group = config.instance_group.add(name=config.name)
        for pg in preferred_groups:
            if pg.kind == _KIND_GPU:
                if not supported:
                    continue
                group.gpus.extend(g for g in pg.gpus if g in supported)
            elif pg.kind == _KIND_AUTO:
                group.gpus.extend(pg.gpus)
            group.kind = pg.kind
            group.count = pg.count
            break

    for index, group in enumerate(config.instance_group):
        if not group.name:
            group.name = f"{config.name}_{index}"
        if group.kind == _KIND_AUTO:
            # GPU only if GPUs exist and every GPU the group names is one of them.
            on_gpu = bool(supported) and all(g in supported for g in group.gpus)
            group.kind = _KIND_GPU if on_gpu else _KIND_CPU
        for pg in preferred_groups:
            if group.kind != pg.kind:
                continue
            if group.kind == _KIND_GPU and not group.gpus and pg.gpus:
                group.gpus.extend(g for g in pg.gpus if g in supported)
                if not group.gpus:
                    continue
            if group.count < 1 and pg.count > 0:
                group.count = pg.count
        if group.count < 1:  # negative counts are normalised too, never rejected
            two = (
                group.kind == _KIND_CPU
                and config.backend in _TWO_CPU_INSTANCE_BACKENDS
            )
            group.count = 2 if two else 1
        if group.kind == _KIND_GPU and not group.gpus:
            group.gpus.extend(supported)


def _auto_complete_backend_fields(
    config: mc.ModelConfig, model_name: str, model_path: Path
) -> None:
    """AutoCompleteBackendFields: name, then backend/platform/default_model_filename.

    Only the first version folder (by name, as Triton sorts them) is inspected.
    """
    version_path: Path | None = None
    contents: set[str] = set()
    if model_path.is_dir():
        subdirs = sorted(p.name for p in model_path.iterdir() if p.is_dir())
        if subdirs:
            version_path = model_path / subdirs[0]
            contents = {p.name for p in version_path.iterdir()}

    def found(filename: str, *, want_dir: bool | None) -> bool:
        if version_path is None or filename not in contents:
            return False
        return want_dir is None or (version_path / filename).is_dir() == want_dir

    if not config.name:
        config.name = model_name

    # TensorFlow: the platform names the format; guess it when the backend allows.
    if not config.platform and config.backend in ("", _TF_BACKEND):
        if config.default_model_filename == _TF_SAVEDMODEL_FILE:
            config.platform = _TF_SAVEDMODEL_PLATFORM
        elif config.default_model_filename == _TF_GRAPHDEF_FILE:
            config.platform = _TF_GRAPHDEF_PLATFORM
        elif not config.default_model_filename:
            if found(_TF_SAVEDMODEL_FILE, want_dir=True):
                config.platform = _TF_SAVEDMODEL_PLATFORM
            if found(_TF_GRAPHDEF_FILE, want_dir=False):
                config.platform = _TF_GRAPHDEF_PLATFORM
    if config.platform in (_TF_SAVEDMODEL_PLATFORM, _TF_GRAPHDEF_PLATFORM):
        config.backend = config.backend or _TF_BACKEND
        if not config.default_model_filename:
            saved = config.platform == _TF_SAVEDMODEL_PLATFORM
            config.default_model_filename = _TF_SAVEDMODEL_FILE if saved else _TF_GRAPHDEF_FILE
        return

    for rule in _RULES:
        if not config.backend:
            named = (rule.platform and config.platform == rule.platform) or (
                config.default_model_filename == rule.filename
            )
            guessed = (
                not config.platform
                and not config.default_model_filename
                and found(rule.filename, want_dir=None if rule.may_be_dir else False)
            )
            if named or guessed:
                config.backend = rule.backend
        if config.backend == rule.backend:
            if rule.platform and not config.platform:
                config.platform = rule.platform
            # The pytorch backend's Python runtime looks for model.py before model.pt.
            python_runtime = rule.backend == "pytorch" and config.runtime == "model.py"
            if not config.default_model_filename and not python_runtime:
                config.default_model_filename = rule.filename
            return

    # A custom backend is named by the model: "<anything>.<backend>", e.g. "add.identity".
    if not (config.backend or config.platform or config.default_model_filename):
        _, dot, backend = model_name.partition(".")
        if not dot:
            raise TritonError.invalid_arg(
                f"Invalid model name: Could not determine backend for model '{model_name}' "
                "with no backend in model configuration. Expected model name of the form "
                "'model.<backend_name>'."
            )
        config.backend = backend
        config.default_model_filename = f"model.{backend}"


def _normalize(config: mc.ModelConfig) -> None:
    """NormalizeModelConfig: the defaults Triton writes into every config."""
    if not config.HasField("version_policy"):
        config.version_policy.latest.num_versions = 1

    if config.HasField("dynamic_batching"):
        preferred = config.dynamic_batching.preferred_batch_size
        if not preferred and config.max_batch_size > 0:
            preferred.append(config.max_batch_size)

    if config.HasField("sequence_batching"):
        batcher = config.sequence_batching
        if batcher.max_sequence_idle_microseconds == 0:
            batcher.max_sequence_idle_microseconds = SEQUENCE_IDLE_DEFAULT_MICROSECONDS
        if batcher.HasField("oldest"):
            preferred = batcher.oldest.preferred_batch_size
            if not preferred and config.max_batch_size > 0:
                preferred.append(config.max_batch_size)

    # Ensembles must not carry an optimization block (validation rejects one).
    if not config.HasField("ensemble_scheduling"):
        optimization = config.optimization
        if not optimization.HasField("input_pinned_memory"):
            optimization.input_pinned_memory.enable = True
        if not optimization.HasField("output_pinned_memory"):
            optimization.output_pinned_memory.enable = True
