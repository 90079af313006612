"""Unit tests of triton_python_backend_utils' model-config helpers (auto_complete_config's
ModelConfig and the lookups). Expected messages are Triton 2.51's words (its stub)."""

from __future__ import annotations

import json

import pytest

import triton_python_backend_utils as pb_utils

# `no_runtime` is autouse: every test here starts and ends with no runtime set.
from support.pb_utils_fake_runtime import no_runtime, response, server_request  # noqa: F401

# --- model-config helpers -------------------------------------------------------------------

CONFIG = {
    "name": "m",
    "max_batch_size": 0,
    "input": [{"name": "IN", "data_type": "TYPE_FP32", "dims": [4]}],
    "output": [{"name": "OUT", "data_type": "TYPE_INVALID", "dims": []}],
}


def model_config(**changes):
    return pb_utils.ModelConfig(json.dumps({**CONFIG, **changes}))


def test_config_lookups():
    assert pb_utils.get_input_config_by_name(CONFIG, "IN")["dims"] == [4]
    assert pb_utils.get_output_config_by_name(CONFIG, "OUT")["name"] == "OUT"
    assert pb_utils.get_input_config_by_name(CONFIG, "NOPE") is None
    assert pb_utils.get_output_config_by_name({}, "OUT") is None
    assert pb_utils.using_decoupled_model_transaction_policy(CONFIG) is False
    policy = {"model_transaction_policy": {"decoupled": True}}
    assert pb_utils.using_decoupled_model_transaction_policy(policy) is True


def test_tensor_by_name_helpers():
    request = server_request()
    assert pb_utils.get_input_tensor_by_name(request, "IN").name() == "IN"
    assert pb_utils.get_input_tensor_by_name(request, "X") is None
    reply = response("A", "B")
    assert pb_utils.get_output_tensor_by_name(reply, "B").name() == "B"
    assert pb_utils.get_output_tensor_by_name(reply, "C") is None


def test_model_config_max_batch_size_and_dynamic_batching():
    config = model_config()
    config.set_max_batch_size(8)
    config.set_dynamic_batching()
    assert config.as_dict()["max_batch_size"] == 8
    assert config.as_dict()["dynamic_batching"] == {}
    with pytest.raises(ValueError) as e:
        model_config(max_batch_size=16).set_max_batch_size(4)
    assert str(e.value) == (
        "configuration specified max_batch_size 16, but in auto-complete-config function for "
        "model 'm' specified max_batch_size 4"
    )
    with pytest.raises(ValueError) as e:
        model_config(sequence_batching={}).set_dynamic_batching()
    assert str(e.value) == (
        "Configuration specified scheduling_choice as 'sequence_batching', but "
        "auto-complete-config function for model 'm' tries to set scheduling_choice as "
        "'dynamic_batching'"
    )


def test_model_config_add_input_and_output():
    config = model_config()
    config.add_input({"name": "IN", "data_type": "TYPE_FP32", "dims": [4], "optional": True})
    config.add_input({"name": "IN2", "data_type": "TYPE_INT32", "dims": [-1]})
    config.add_output({"name": "OUT", "data_type": "TYPE_FP32", "dims": [2]})
    as_dict = config.as_dict()
    assert as_dict["input"][0]["optional"] is True
    assert [i["name"] for i in as_dict["input"]] == ["IN", "IN2"]
    assert as_dict["output"] == [{"name": "OUT", "data_type": "TYPE_FP32", "dims": [2]}]


@pytest.mark.parametrize(
    "kind, tensor, message",
    [
        (
            "input",
            {"name": "X", "data_type": "TYPE_FP32", "dims": [1], "format": "x"},
            "input 'X' in auto-complete-config function for model 'm' contains property "
            "other than 'name', 'data_type', 'dims' and 'optional'.",
        ),
        (
            "output",
            {"name": "X", "data_type": "TYPE_FP32", "dims": [1], "optional": True},
            "output 'X' in auto-complete-config function for model 'm' contains property "
            "other than 'name', 'data_type' and 'dims'.",
        ),
        (
            "input",
            {"data_type": "TYPE_FP32", "dims": [1]},
            "input in auto-complete-config function for model 'm' is missing 'name' property.",
        ),
        (
            "output",
            {"name": "X", "dims": [1]},
            "output 'X' in auto-complete-config function for model 'm' is missing "
            "'data_type' property.",
        ),
        (
            "input",
            {"name": "X", "data_type": "TYPE_FP32"},
            "input 'X' in auto-complete-config function for model 'm' is missing 'dims' "
            "property.",
        ),
        (
            "input",
            {"name": "IN", "data_type": "TYPE_INT8", "dims": [4]},
            "unable to load model 'm', configuration expects datatype TYPE_FP32 for input "
            "'IN', model provides TYPE_INT8",
        ),
        (
            "input",
            {"name": "IN", "data_type": "TYPE_FP32", "dims": [5]},
            "model 'm', tensor 'IN': the model expects dims [5] but the model configuration "
            "specifies dims [4]",
        ),
    ],
)
def test_model_config_tensor_errors(kind, tensor, message):
    config = model_config()
    add = config.add_input if kind == "input" else config.add_output
    with pytest.raises(ValueError) as e:
        add(tensor)
    assert str(e.value) == message


def test_model_config_optional_mismatch():
    config = model_config(
        input=[{"name": "IN", "data_type": "TYPE_FP32", "dims": [4], "optional": False}]
    )
    with pytest.raises(ValueError) as e:
        config.add_input({"name": "IN", "data_type": "TYPE_FP32", "dims": [4], "optional": True})
    assert str(e.value) == (
        "model 'm', tensor 'IN': the model expects optional True but the model configuration "
        "specifies optional False"
    )


def test_model_config_transaction_policy():
    config = model_config()
    config.set_model_transaction_policy({"decoupled": True})
    assert pb_utils.using_decoupled_model_transaction_policy(config.as_dict())
    with pytest.raises(ValueError) as e:
        config.set_model_transaction_policy({"decoupled": False})
    assert str(e.value) == (
        "trying to change decoupled property in auto-complete-config for model 'm', which is "
        "already set to 'True'."
    )
    with pytest.raises(ValueError) as e:
        config.set_model_transaction_policy({"other": 1})
    assert str(e.value) == (
        "model transaction property in auto-complete-config function for model 'm' contains "
        "property other than 'decoupled'."
    )
