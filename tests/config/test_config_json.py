"""Unit tests for tritium.config's JSON form (what GET /v2/models/<name>/config answers).

The fixtures tests/support/data/triton_config_<name>.{pbtxt,json} are a config.pbtxt and the body
the reference server (tools/reference-triton.sh) returned for it at GET /v2/models/<name>/config
(python-backend models whose model.py defines no auto_complete_config, so the python backend adds
nothing of its own). The expected messages are Triton 2.51's, as read in
core/src/model_config_utils.cc and as the reference server printed them.
"""

from __future__ import annotations

import json

import pytest

from support.config_builders import CPU, DATA, error_of, loaded, valid
from tritium.config import model_config_from_json, model_config_to_json, normalize_instance_groups
from tritium.errors import Code

# --- JSON form ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["simple_py", "big_json", "ens"])
def test_json_matches_triton(tmp_path, name):
    cfg = loaded(tmp_path, name, (DATA / f"triton_config_{name}.pbtxt").read_text())
    normalize_instance_groups(cfg)
    expected = json.loads((DATA / f"triton_config_{name}.json").read_text())
    ours = model_config_to_json(cfg)
    if name == "ens":
        # Triton's ensemble loader (not config normalization) records whether the ensemble is
        # decoupled; that belongs to the ensemble scheduler.
        expected.pop("model_transaction_policy")
    assert ours == expected
    # Same key order too, so a compact dump is byte-identical to Triton's body.
    if name != "ens":
        text = json.dumps(ours, separators=(",", ":"))
        assert text == (DATA / f"triton_config_{name}.json").read_text()


def test_json_int64_as_numbers_enums_as_names_and_defaults_present():
    cfg = valid(
        'input [ { name: "I" data_type: TYPE_FP32 dims: [ -1, 3 ] } ] '
        "dynamic_batching { max_queue_delay_microseconds: 100 priority_queue_policy "
        "{ key: 2 value { default_timeout_microseconds: 9 } } } "
        "instance_group [ { kind: KIND_CPU secondary_devices [ { device_id: 7 } ] } ]"
    )
    obj = model_config_to_json(cfg)
    assert obj["input"][0]["dims"] == [-1, 3]
    assert obj["input"][0]["data_type"] == "TYPE_FP32"
    assert obj["input"][0]["format"] == "FORMAT_NONE"
    batching = obj["dynamic_batching"]
    assert batching["max_queue_delay_microseconds"] == 100
    assert batching["priority_queue_policy"] == {
        "2": {
            "timeout_action": "REJECT",
            "default_timeout_microseconds": 9,
            "allow_timeout_override": False,
            "max_queue_size": 0,
        }
    }
    assert obj["instance_group"][0]["secondary_devices"][0]["device_id"] == 7
    assert obj["version_policy"] == {"latest": {"num_versions": 1}}
    defaults = {"runtime": "", "batch_input": [], "parameters": {}, "model_warmup": []}
    assert {key: obj[key] for key in defaults} == defaults
    assert "sequence_batching" not in obj  # unset messages stay out, as in Triton


def test_json_int64_everywhere_in_the_schema():
    cfg = valid(
        "sequence_batching { max_sequence_idle_microseconds: 5 state [ { dims: [ 2 ] "
        "initial_state [ { dims: [ 3 ] } ] } ] } "
        "optimization { cuda { graph_spec [ { input { key: \"I\" value { dim: [ 4 ] } } } ] } }"
    )
    obj = model_config_to_json(cfg)
    state = obj["sequence_batching"]["state"][0]
    assert state["dims"] == [2] and state["initial_state"][0]["dims"] == [3]
    assert obj["sequence_batching"]["max_sequence_idle_microseconds"] == 5
    assert obj["optimization"]["cuda"]["graph_spec"][0]["input"]["I"]["dim"] == [4]


def test_json_round_trip(tmp_path):
    cfg = loaded(tmp_path, "big_json", (DATA / "triton_config_big_json.pbtxt").read_text())
    obj = model_config_to_json(cfg)
    assert model_config_from_json(obj) == cfg
    assert model_config_from_json(json.dumps(obj)) == cfg


def test_json_parse_accepts_any_case_enums_and_camel_case():
    cfg = model_config_from_json(
        '{"name": "m", "maxBatchSize": 2, "instance_group": [{"kind": "kind_cpu"}]}'
    )
    assert cfg.max_batch_size == 2
    assert cfg.instance_group[0].kind == CPU


def test_json_parse_reads_what_protobufs_parser_reads():
    """Triton parses a config override with protobuf's JsonStringToMessage: unquoted keys,
    single-quoted strings and a trailing comma are accepted (Triton's L0_iterative_sequence
    sends `direct: {...}`)."""
    cfg = model_config_from_json(
        "{name: 'it\\'s', max_batch_size: 4, \"sequence_batching\": {iterative_sequence: true,"
        " direct: {'max_queue_delay_microseconds': 10000000,},}, input: [{name: 'IN', "
        "data_type: 'TYPE_INT32', dims: [1,],},],}")
    assert cfg.name == "it's"
    assert cfg.max_batch_size == 4
    assert cfg.sequence_batching.iterative_sequence
    assert cfg.sequence_batching.direct.max_queue_delay_microseconds == 10000000
    assert list(cfg.input[0].dims) == [1]
    # A key that is a literal or a number is refused, as by protobuf; the message is about the
    # client's own text.
    for text in ('{true: 1}', '{42: 1}', "{name: }"):
        err = error_of(model_config_from_json, text)
        assert err.code is Code.INVALID_ARG
        assert err.message.startswith("model configuration is not valid JSON: Expecting ")


def test_json_parse_takes_a_lone_value_as_a_one_element_list():
    """As protobuf C++'s JsonStringToMessage (Triton's L0_lifecycle sends `"instance_group":
    {...}`): a message or a scalar where a list belongs is that list's only element."""
    cfg = model_config_from_json(
        '{"name": "m", "instance_group": {"kind": "KIND_CPU", "count": 5}, '
        '"input": {"name": "IN", "data_type": "TYPE_INT32", "dims": 16}, "output": null}')
    assert len(cfg.instance_group) == 1
    assert cfg.instance_group[0].count == 5 and cfg.instance_group[0].kind == CPU
    assert cfg.input[0].name == "IN" and list(cfg.input[0].dims) == [16]
    assert not cfg.output
    # A map stays a map: a list there is still refused.
    err = error_of(model_config_from_json, '{"name": "m", "parameters": [1]}')
    assert err.code is Code.INVALID_ARG


@pytest.mark.parametrize(
    "obj, message",
    [
        (
            '{"name": "m", "foo": 1}',
            'Message type "inference.ModelConfig" has no field named "foo"',
        ),
        ("{not json", "model configuration is not valid JSON"),
        ("[1]", "model configuration JSON must be an object"),
        ({"max_batch_size": "x"}, "Failed to parse max_batch_size field"),
    ],
)
def test_json_parse_errors(obj, message):
    err = error_of(model_config_from_json, obj)
    assert err.code is Code.INVALID_ARG
    assert message in err.message
    assert "\n" not in err.message
