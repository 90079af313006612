"""The `ray` model parameter: which groups go to Ray, with which actor options, and the errors a
bad value gets (read without Ray: a server without --ray-address never imports it)."""

from __future__ import annotations

import json

import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from tritium.errors import Code, TritonError
from tritium.ray.options import group_options, instance_options


def config(parameters: str) -> mc.ModelConfig:
    return text_format.Parse(
        'name: "m" instance_group [ { name: "a" count: 1 }, { name: "b" count: 2 } ]\n'
        + parameters, mc.ModelConfig())


def ray(key: str, value: str) -> str:
    return f'parameters {{ key: "{key}" value: {{ string_value: {json.dumps(value)} }} }}\n'


def options(parameters: str) -> dict[str, object]:
    model = config(parameters)
    return {group.name: group_options(model, group) for group in model.instance_group}


def test_no_parameter_runs_locally():
    assert options("") == {"a": None, "b": None}


def test_model_wide_options_and_a_group_override():
    found = options(ray("ray", '{"num_cpus": 1, "scheduling_strategy": "SPREAD"}')
                    + ray("ray:b", '{"num_gpus": 1, "resources": {"accel": 2}}'))
    assert found["a"] == {"num_cpus": 1, "scheduling_strategy": "SPREAD"}
    assert found["b"] == {"num_cpus": 1, "scheduling_strategy": "SPREAD", "num_gpus": 1,
                          "resources": {"accel": 2}}


def test_only_one_group_on_ray():
    assert options(ray("ray:a", '{"num_cpus": 0.5}')) == {"a": {"num_cpus": 0.5}, "b": None}


def test_node_affinity():
    found = options(ray("ray", '{"scheduling_strategy": {"node_id": "abc"}}'))
    assert found["a"] == {"scheduling_strategy": {"node_id": "abc", "soft": False}}


@pytest.mark.parametrize("value,words", [
    ("not json", "must be a JSON object of Ray actor options"),
    ("[1]", "must be a JSON object of Ray actor options"),
    ('{"num_cpu": 1}', "unsupported Ray actor option(s) num_cpu"),
    ('{"num_cpus": -1}', "'num_cpus' must be a number >= 0"),
    ('{"num_gpus": true}', "'num_gpus' must be a number >= 0"),
    ('{"resources": {"x": "1"}}', "'resources' must map names to numbers >= 0"),
    ('{"runtime_env": "pip"}', "'runtime_env' must be a JSON object"),
    ('{"scheduling_strategy": "PACK"}', "'scheduling_strategy' must be"),
])
def test_bad_values_are_refused(value, words):
    with pytest.raises(TritonError) as raised:
        options(ray("ray", value))
    assert raised.value.code is Code.INVALID_ARG
    assert "model 'm': parameter 'ray'" in raised.value.message
    assert words in raised.value.message


def test_a_gpu_instance_asks_ray_for_one_gpu_unless_told() -> None:
    assert instance_options("KIND_GPU", {"num_cpus": 1}) == {"num_cpus": 1, "num_gpus": 1}
    assert instance_options("KIND_GPU", {"num_gpus": 0.5}) == {"num_gpus": 0.5}
    assert instance_options("KIND_CPU", {"num_cpus": 1}) == {"num_cpus": 1}
