"""Validation of a normalized model configuration, with Triton's own messages.

A port of `ValidateModelConfig` and `ValidateInstanceGroup` (core `src/model_config_utils.cc`,
Triton 2.51, GPU-enabled build as shipped). Every failure is INVALID_ARG except an unresolved
KIND_AUTO group, which Triton reports as INTERNAL because normalization should have resolved it.

When each check runs, in Triton's order:
- `validate_model_config` right after `normalize_model_config`, when the repository is polled.
- `validate_instance_groups` when a version is created, after `normalize_instance_groups`.
- `validate_model_io_config` (in `validate_io`) at poll time too when auto-complete is off;
  with auto-complete on, only after the backend has completed the inputs and outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from tritonclient.grpc import model_config_pb2 as mc

from ..errors import TritonError
from .normalize import ENSEMBLE_PLATFORM
from .validate_ensemble import validate_ensemble_graph

# Triton's default --min-compute-capability, printed with std::to_string(double).
MIN_COMPUTE_CAPABILITY = 6.0

# GetBackendType / GetBackendTypeFromPlatform: the backends whose platform must agree.
_BACKEND_FAMILY = {
    "tensorflow": "tensorflow",
    "tensorrt": "tensorrt",
    "onnxruntime": "onnxruntime",
    "pytorch": "pytorch",
}
_PLATFORM_FAMILY = {
    "tensorflow_graphdef": "tensorflow",
    "tensorflow_savedmodel": "tensorflow",
    "tensorrt_plan": "tensorrt",
    "onnxruntime_onnx": "onnxruntime",
    "pytorch_libtorch": "pytorch",
}
TENSORRT_PLATFORM = "tensorrt_plan"

_Control = mc.ModelSequenceBatching.Control
_CORRID_TYPES = (mc.TYPE_UINT64, mc.TYPE_INT64, mc.TYPE_UINT32, mc.TYPE_INT32, mc.TYPE_STRING)
_FALSE_TRUE = ("int32_false_true", "fp32_false_true", "bool_false_true")
# Tritium's own bound on one model's instances (Triton has none): each instance is a thread, a
# process or a native handle, so a load request asking for two billion of them made the server
# build a list of them first (18 GB before the kernel killed it), and a million ran out of
# threads after 26 s. Eight GPUs with 128 instances each still fit.
MAX_MODEL_INSTANCES = 1024


def _invalid(message: str) -> TritonError:
    return TritonError.invalid_arg(message)


def validate_model_config(config: mc.ModelConfig) -> None:
    """Triton's ValidateModelConfig: the checks that need no backend and no devices."""
    name = config.name
    if not name:
        raise _invalid("model configuration must specify 'name'")
    if not config.backend:
        if config.platform != ENSEMBLE_PLATFORM:
            raise _invalid(f"unexpected platform type '{config.platform}' for {name}")
    elif config.platform == ENSEMBLE_PLATFORM:
        raise _invalid(
            f"Ensemble model '{name}' must have platform type '{config.platform}' "
            "and empty backend type"
        )
    family = _BACKEND_FAMILY.get(config.backend)
    if family is not None and family != _PLATFORM_FAMILY.get(config.platform):
        raise _invalid(
            "unexpected 'platform' and 'backend' pair, got:"
            f"{config.platform}, {config.backend}"
        )
    if config.max_batch_size < 0:
        raise _invalid(f"'max_batch_size' must be non-negative value for {name}")
    if not config.HasField("version_policy"):
        raise _invalid(f"must specify 'version policy' for {name}")
    if config.HasField("dynamic_batching"):
        _validate_dynamic_batching(config)
    if config.HasField("sequence_batching"):
        _validate_sequence_batching(config)
    if config.HasField("ensemble_scheduling"):
        _validate_ensemble_basics(config)
    elif config.platform == ENSEMBLE_PLATFORM:
        raise _invalid(
            f"ensemble scheduling must be set for ensemble {name} "
            f"whose platform is {ENSEMBLE_PLATFORM}"
        )
    validate_response_cache(config)
    if config.HasField("model_metrics"):
        _validate_model_metrics(config.model_metrics)


def validate_response_cache(config: mc.ModelConfig) -> None:
    """A decoupled model cannot use the response cache; an ensemble is checked again once
    its steps have said whether it is decoupled, as Triton's Model::Init does."""
    if config.model_transaction_policy.decoupled and config.response_cache.enable:
        raise _invalid(
            f"Response Cache does not currently support model {config.name} with 'decoupled' "
            "transaction policy. Please disable the response cache."
        )


def validate_instance_groups(
    config: mc.ModelConfig,
    *,
    gpus: Collection[int] = (),
    min_compute_capability: float = MIN_COMPUTE_CAPABILITY,
) -> None:
    """Triton's ValidateInstanceGroup, on groups already normalized; `gpus` are the device ids
    placement may use (those at or above `min_compute_capability`)."""
    if config.HasField("ensemble_scheduling"):
        return
    if not config.instance_group:
        raise _invalid(f"must specify one or more 'instance group's for {config.name}")
    instances = sum(
        group.count * (len(group.gpus) if group.kind == mc.ModelInstanceGroup.KIND_GPU else 1)
        for group in config.instance_group
    )
    if instances > MAX_MODEL_INSTANCES:
        raise _invalid(
            f"instance groups of model {config.name} ask for {instances} instances; at most "
            f"{MAX_MODEL_INSTANCES} instances per model are supported"
        )
    for group in config.instance_group:
        where = f"instance group {group.name} of model {config.name}"
        if group.kind == mc.ModelInstanceGroup.KIND_MODEL:
            if group.gpus:
                raise _invalid(f"{where} has kind KIND_MODEL but specifies one or more GPUs")
        elif group.kind == mc.ModelInstanceGroup.KIND_GPU:
            if not group.gpus:
                why = "no GPUs are available" if not gpus else "specifies no GPUs"
                raise _invalid(f"{where} has kind KIND_GPU but {why}")
            for gpu in group.gpus:
                if gpu not in gpus:
                    available = ", ".join(str(g) for g in sorted(gpus))
                    raise _invalid(
                        f"{where} specifies invalid or unsupported gpu id {gpu}. GPUs with at "
                        "least the minimum required CUDA compute compatibility of "
                        f"{min_compute_capability:.6f} are: {available}"
                    )
        elif group.kind == mc.ModelInstanceGroup.KIND_CPU:
            if group.gpus:
                raise _invalid(f"{where} has kind KIND_CPU but specifies one or more GPUs")
        else:
            raise TritonError.internal(f"{where} has unexpected kind KIND_AUTO")
        if config.platform != TENSORRT_PLATFORM and group.profile:
            # Triton's message lacks the space before "specifies"; kept verbatim.
            raise _invalid(
                f"{where} and platform {config.platform}specifies profile field which is "
                "only supported for TensorRT models"
            )


def _validate_dynamic_batching(config: mc.ModelConfig) -> None:
    name, batching = config.name, config.dynamic_batching
    for size in batching.preferred_batch_size:
        if size <= 0:
            raise _invalid(f"dynamic batching preferred size must be positive for {name}")
        if size > config.max_batch_size:
            raise _invalid(
                f"dynamic batching preferred size must be <= max batch size for {name}"
            )
    levels = batching.priority_levels
    if levels != 0:
        if not 1 <= batching.default_priority_level <= levels:
            raise _invalid(f"default priority level must be in range [1, {levels}] for {name}")
        for level in batching.priority_queue_policy:
            if not 1 <= level <= levels:
                raise _invalid(
                    "priority queue policy must have priority level in range "
                    f"[1, {levels}] for {name}"
                )
    if batching.preserve_ordering:
        if levels > 1:
            raise _invalid(
                f"Only one priority level is allowed when 'preserve_ordering' is true for {name}"
            )
        policies = [batching.default_queue_policy, *batching.priority_queue_policy.values()]
        for policy in policies:
            if (
                policy.default_timeout_microseconds != 0
                and policy.timeout_action == mc.ModelQueuePolicy.DELAY
            ):
                raise _invalid(
                    "Queue policy can not have DELAY as timeout action when "
                    f"'preserve_ordering' is true for {name}"
                )


def _validate_sequence_batching(config: mc.ModelConfig) -> None:
    name, batcher = config.name, config.sequence_batching
    if config.response_cache.enable:
        raise _invalid(
            f"Response Cache does not currently support model {name} with sequence "
            "batching scheduler. Please disable the response cache."
        )
    for kind in (
        _Control.CONTROL_SEQUENCE_START,
        _Control.CONTROL_SEQUENCE_END,
        _Control.CONTROL_SEQUENCE_READY,
    ):
        _find_control(batcher, name, kind, _check_boolean_control)
    corrid = _find_control(batcher, name, _Control.CONTROL_SEQUENCE_CORRID, _check_typed_control)
    if corrid is not None and corrid.data_type not in _CORRID_TYPES:
        raise _invalid(
            f"unexpected data type for control CONTROL_SEQUENCE_CORRID for {name}. Allowed "
            "data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING"
        )
    if batcher.HasField("oldest"):
        for size in batcher.oldest.preferred_batch_size:
            if size <= 0:
                raise _invalid(
                    f"sequence batching preferred batch size must be positive for {name}"
                )
            if size > config.max_batch_size:
                raise _invalid(
                    "sequence batching preferred batch size must be <= max batch size "
                    f"for {name}"
                )
    if batcher.HasField("direct"):
        utilization = batcher.direct.minimum_slot_utilization
        if utilization < 0.0 or utilization > 1.0:
            raise _invalid(
                "sequence batching minimum slot utilization must be in range (0.0, 1.0] "
                f"for {name}"
            )


def _find_control(
    batcher: mc.ModelSequenceBatching,
    model: str,
    kind: int,
    check: Callable[[mc.ModelSequenceBatching.Control, str, str], None],
) -> mc.ModelSequenceBatching.Control | None:
    """Get{Boolean,Typed}SequenceControlProperties: the one control of `kind`, checked."""
    kind_name = _Control.Kind.Name(kind)
    seen_tensors: set[str] = set()
    found = None
    for control_input in batcher.control_input:
        if not control_input.name:
            raise _invalid(f"sequence batching control tensor must have a name for {model}")
        if control_input.name in seen_tensors:
            raise _invalid(
                f"sequence batching control tensor '{control_input.name}' is specified for "
                f"multiple control kinds for {model}"
            )
        seen_tensors.add(control_input.name)
        for control in control_input.control:
            if control.kind != kind:
                continue
            if found is not None:
                raise _invalid(
                    f"sequence batching specifies multiple {kind_name} tensors for {model}"
                )
            found = control
            check(control, kind_name, model)
    return found


def _check_boolean_control(
    control: mc.ModelSequenceBatching.Control, kind: str, model: str
) -> None:
    given = [field for field in _FALSE_TRUE if len(getattr(control, field)) != 0]
    if not given:
        raise _invalid(
            "sequence batching must specify either 'int32_false_true', 'fp32_false_true' or "
            f"'bool_false_true' for {kind} for {model}"
        )
    if len(given) > 1:
        raise _invalid(
            "sequence batching specifies more than one from 'int32_false_true', "
            f"'fp32_false_true' and 'bool_false_true' for {kind} for {model}"
        )
    if len(getattr(control, given[0])) != 2:
        raise _invalid(
            f"sequence batching control '{given[0]}' must have exactly 2 entries for {kind} "
            f"for {model}"
        )


def _check_typed_control(
    control: mc.ModelSequenceBatching.Control, kind: str, model: str
) -> None:
    if any(len(getattr(control, field)) != 0 for field in _FALSE_TRUE):
        raise _invalid(
            "sequence batching must not specify either 'int32_false_true', 'fp32_false_true' "
            f"or 'bool_false_true' for {kind} for {model}"
        )


def _validate_ensemble_basics(config: mc.ModelConfig) -> None:
    """ValidateEnsembleSchedulingConfig: what an ensemble may not carry, then its data flow."""
    name = config.name
    if config.platform != ENSEMBLE_PLATFORM:
        raise _invalid(
            f"ensemble scheduling cannot be set for model '{name}' whose platform is not "
            f"{ENSEMBLE_PLATFORM}"
        )
    if config.instance_group:
        raise _invalid(f"instance group should not be specified for ensemble '{name}'")
    if config.HasField("optimization"):
        raise _invalid(f"optimization should not be specified for ensemble '{name}'")
    if config.model_warmup:
        raise _invalid(f"model_warmup can not be specified for ensemble '{name}'")
    if not config.ensemble_scheduling.step:
        raise _invalid(f"must specify 'step' for ensemble '{name}'")
    validate_ensemble_graph(config)


def _validate_model_metrics(metrics: mc.ModelMetrics) -> None:
    for control in metrics.metric_control:
        if not control.HasField("metric_identifier"):
            raise _invalid("metric control must specify 'metric_identifier'")
        if not control.metric_identifier.family:
            raise _invalid("metric identifier must specify non-empty 'family'")
        if not control.HasField("histogram_options"):
            raise _invalid("metric control must specify 'histogram_options'")
        if not control.histogram_options.buckets:
            raise _invalid("histogram options must specify non-empty 'buckets'")
