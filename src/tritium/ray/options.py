"""Where a model's instances go on the Ray cluster: the `ray` model parameter.

Triton has no counterpart (its answer past one machine is Kubernetes); the instance group stays
the unit (count and kind), and a model parameter says "place these instances on Ray", with Ray's
own actor options:

    parameters { key: "ray"
                 value: { string_value: "{\"num_cpus\": 1, \"scheduling_strategy\": \"SPREAD\"}" } }

`ray` applies to every instance group of the model; `ray:<group name>` applies to that group
alone (over `ray`). The value is a JSON object of the actor options Ray's `.options()` takes
that make sense for an instance: `num_cpus`, `num_gpus`, `memory`, `resources`,
`accelerator_type`, `runtime_env`, `scheduling_strategy` ("DEFAULT", "SPREAD", or
`{"node_id": "...", "soft": false}` for Ray's NodeAffinitySchedulingStrategy), `label_selector`.
Anything else is refused at load with INVALID_ARG, so a typo never silently runs locally.
This module reads the configuration only; it does not import Ray.
"""

from __future__ import annotations

import json
from typing import Any

from tritonclient.grpc import model_config_pb2 as mc

from ..errors import TritonError

PARAMETER = "ray"
_NUMBERS = ("num_cpus", "num_gpus", "memory")
_ALLOWED = frozenset(
    {*_NUMBERS, "resources", "accelerator_type", "runtime_env", "scheduling_strategy",
     "label_selector"}
)
_STRATEGIES = ("DEFAULT", "SPREAD")


def group_options(config: mc.ModelConfig, group: mc.ModelInstanceGroup) -> dict[str, Any] | None:
    """The Ray actor options for `group`'s instances, or None to run them locally."""
    parameters = config.parameters
    merged: dict[str, Any] | None = None
    for key in (PARAMETER, f"{PARAMETER}:{group.name}"):
        if key in parameters:
            merged = {**(merged or {}), **_parse(config.name, key, parameters[key].string_value)}
    return merged


def instance_options(kind: str, options: dict[str, Any]) -> dict[str, Any]:
    """One instance's actor options: a KIND_GPU instance asks Ray for one GPU unless the model
    says how many, so Ray picks a node with a free GPU and shows the actor only that device (its
    `cuda:0`)."""
    if kind == "KIND_GPU" and "num_gpus" not in options:
        return {**options, "num_gpus": 1}
    return options


def placed_on_ray(config: mc.ModelConfig) -> bool:
    """Whether any instance group of the model asks for Ray."""
    return any(key == PARAMETER or key.startswith(PARAMETER + ":") for key in config.parameters)


def _parse(model: str, key: str, text: str) -> dict[str, Any]:
    where = f"model '{model}': parameter '{key}'"
    try:
        options = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise TritonError.invalid_arg(f"{where} must be a JSON object of Ray actor options: "
                                      f"{exc}") from None
    if not isinstance(options, dict):
        raise TritonError.invalid_arg(f"{where} must be a JSON object of Ray actor options")
    unknown = sorted(set(options) - _ALLOWED)
    if unknown:
        raise TritonError.invalid_arg(
            f"{where}: unsupported Ray actor option(s) {', '.join(unknown)} (supported: "
            f"{', '.join(sorted(_ALLOWED))})"
        )
    for name in _NUMBERS:
        value = options.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or value < 0):
            raise TritonError.invalid_arg(f"{where}: '{name}' must be a number >= 0")
    resources = options.get("resources")
    if resources is not None and (
        not isinstance(resources, dict)
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
                   for v in resources.values())
    ):
        raise TritonError.invalid_arg(f"{where}: 'resources' must map names to numbers >= 0")
    if "runtime_env" in options and not isinstance(options["runtime_env"], dict):
        raise TritonError.invalid_arg(f"{where}: 'runtime_env' must be a JSON object")
    strategy = options.get("scheduling_strategy")
    if strategy is not None:
        options["scheduling_strategy"] = _strategy(where, strategy)
    return options


def _strategy(where: str, strategy: Any) -> Any:
    """Ray's strategy names as they are; a node affinity as a dict, turned into Ray's object
    by the placement (this module stays free of Ray)."""
    if isinstance(strategy, str) and strategy in _STRATEGIES:
        return strategy
    if isinstance(strategy, dict) and isinstance(strategy.get("node_id"), str) \
            and set(strategy) <= {"node_id", "soft"}:
        return {"node_id": strategy["node_id"], "soft": bool(strategy.get("soft", False))}
    raise TritonError.invalid_arg(
        f"{where}: 'scheduling_strategy' must be \"DEFAULT\", \"SPREAD\" or "
        '{"node_id": "<node id>", "soft": <bool>}'
    )
