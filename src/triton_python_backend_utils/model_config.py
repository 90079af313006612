"""Model configuration helpers: lookups in a model-config dict (Triton's resource file), and
``ModelConfig``, what ``auto_complete_config`` receives and completes."""

from __future__ import annotations

import json


def get_input_config_by_name(model_config: dict, name: str) -> dict | None:
    """The ``input`` entry called ``name`` of a model-config dict, or None."""
    for entry in model_config.get("input", ()):
        if entry["name"] == name:
            return entry
    return None


def get_output_config_by_name(model_config: dict, name: str) -> dict | None:
    """The ``output`` entry called ``name`` of a model-config dict, or None."""
    for entry in model_config.get("output", ()):
        if entry["name"] == name:
            return entry
    return None


def using_decoupled_model_transaction_policy(model_config: dict) -> bool:
    """Whether a model-config dict sets ``model_transaction_policy.decoupled``."""
    if "model_transaction_policy" in model_config:
        return model_config["model_transaction_policy"]["decoupled"]
    return False


class ModelConfig:
    """The model configuration handed to ``auto_complete_config``.

    ``model_config`` is the configuration as JSON. Only max_batch_size, dynamic batching,
    inputs, outputs and the transaction policy can be completed, each refusing to contradict
    what the configuration already says.
    """

    def __init__(self, model_config: str) -> None:
        self._model_config = json.loads(model_config)

    def as_dict(self) -> dict:
        """The configuration as a dict (read it, don't change it)."""
        return self._model_config

    def _name(self) -> str:
        return self._model_config["name"]

    def set_max_batch_size(self, max_batch_size: int) -> None:
        """Set max_batch_size; a configured value larger than it is an error."""
        configured = self._model_config["max_batch_size"]
        if configured > max_batch_size:
            raise ValueError(
                f"configuration specified max_batch_size {configured}, but in "
                f"auto-complete-config function for model '{self._name()}' specified "
                f"max_batch_size {max_batch_size}"
            )
        self._model_config["max_batch_size"] = max_batch_size

    def set_dynamic_batching(self) -> None:
        """Choose the dynamic batcher unless another scheduler is configured."""
        for scheduler in ("sequence_batching", "ensemble_scheduling"):
            if scheduler in self._model_config:
                raise ValueError(
                    f"Configuration specified scheduling_choice as '{scheduler}', but "
                    f"auto-complete-config function for model '{self._name()}' tries to set "
                    "scheduling_choice as 'dynamic_batching'"
                )
        self._model_config.setdefault("dynamic_batching", {})

    def add_input(self, input: dict) -> None:
        """Add an input (name, data_type, dims and optionally optional) or complete one."""
        self._add_tensor("input", input, ("name", "data_type", "dims", "optional"))

    def add_output(self, output: dict) -> None:
        """Add an output (name, data_type, dims) or complete the configured one."""
        self._add_tensor("output", output, ("name", "data_type", "dims"))

    def _add_tensor(self, kind: str, tensor: dict, properties: tuple[str, ...]) -> None:
        model = self._name()
        for prop in tensor:
            if prop not in properties:
                listed = ", ".join(f"'{p}'" for p in properties[:-1])
                raise ValueError(
                    f"{kind} '{tensor['name']}' in auto-complete-config function for model "
                    f"'{model}' contains property other than {listed} and '{properties[-1]}'."
                )
        if "name" not in tensor:
            raise ValueError(
                f"{kind} in auto-complete-config function for model '{model}' is missing "
                "'name' property."
            )
        for prop in ("data_type", "dims"):
            if prop not in tensor:
                raise ValueError(
                    f"{kind} '{tensor['name']}' in auto-complete-config function for model "
                    f"'{model}' is missing '{prop}' property."
                )
        name = tensor["name"]
        for current in self._model_config[kind]:
            if current["name"] != name:
                continue
            if current["data_type"] not in ("TYPE_INVALID", tensor["data_type"]):
                raise ValueError(
                    f"unable to load model '{model}', configuration expects datatype "
                    f"{current['data_type']} for {kind} '{name}', model provides "
                    f"{tensor['data_type']}"
                )
            if current["dims"] and current["dims"] != tensor["dims"]:
                raise ValueError(
                    f"model '{model}', tensor '{name}': the model expects dims "
                    f"{tensor['dims']} but the model configuration specifies dims "
                    f"{current['dims']}"
                )
            if (
                "optional" in current
                and "optional" in tensor
                and current["optional"] != tensor["optional"]
            ):
                raise ValueError(
                    f"model '{model}', tensor '{name}': the model expects optional "
                    f"{tensor['optional']} but the model configuration specifies optional "
                    f"{current['optional']}"
                )
            current["data_type"] = tensor["data_type"]
            current["dims"] = tensor["dims"]
            if "optional" in tensor:
                current["optional"] = tensor["optional"]
            return
        self._model_config[kind].append(tensor)

    def set_model_transaction_policy(self, transaction_policy_dict: dict) -> None:
        """Set ``model_transaction_policy`` (only 'decoupled'), not contradicting the config."""
        model = self._name()
        for prop in transaction_policy_dict:
            if prop != "decoupled":
                raise ValueError(
                    "model transaction property in auto-complete-config function for model "
                    f"'{model}' contains property other than 'decoupled'."
                )
        policy = self._model_config.setdefault("model_transaction_policy", {})
        if "decoupled" in transaction_policy_dict:
            decoupled = transaction_policy_dict["decoupled"]
            if "decoupled" in policy and policy["decoupled"] != decoupled:
                raise ValueError(
                    "trying to change decoupled property in auto-complete-config for model "
                    f"'{model}', which is already set to '{policy['decoupled']}'."
                )
            policy["decoupled"] = decoupled

