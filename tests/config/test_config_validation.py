"""Unit tests for tritium.config's validation: platform and backend, model-config rules,
ensembles, instance groups and inputs/outputs.
The expected messages are Triton 2.51's, as read in core/src/model_config_utils.cc and as the
reference server (tools/reference-triton.sh) printed them.
"""

from __future__ import annotations

import pytest

from support.config_builders import DATA, config, error_of, loaded, valid
from tritium.config import (
    normalize_instance_groups,
    validate_instance_groups,
    validate_model_config,
    validate_model_io_config,
)
from tritium.errors import Code

# --- validation ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, message",
    [
        ('name: "m"', "unexpected platform type '' for m"),
        ('name: "m" platform: "caffe2"', "unexpected platform type 'caffe2' for m"),
        (
            'name: "m" platform: "ensemble" backend: "python"',
            "Ensemble model 'm' must have platform type 'ensemble' and empty backend type",
        ),
        (
            'name: "m" platform: "onnxruntime_onnx" backend: "pytorch"',
            "unexpected 'platform' and 'backend' pair, got:onnxruntime_onnx, pytorch",
        ),
        ('name: "m" backend: "python"', "must specify 'version policy' for m"),
        ('name: "m" platform: "ensemble" version_policy { all { } }',
         "ensemble scheduling must be set for ensemble m whose platform is ensemble"),
    ],
)
def test_validate_platform_backend_and_policy(text, message):
    err = error_of(validate_model_config, config(text))
    assert err.code is Code.INVALID_ARG
    assert err.message == message


def test_unknown_backend_accepts_any_platform():
    validate_model_config(valid('platform: "onnxruntime_onnx"'))


@pytest.mark.parametrize(
    "text, message",
    [
        ("max_batch_size: -1", "'max_batch_size' must be non-negative value for m"),
        (
            "max_batch_size: 4 dynamic_batching { preferred_batch_size: [ 0 ] }",
            "dynamic batching preferred size must be positive for m",
        ),
        (
            "max_batch_size: 4 dynamic_batching { preferred_batch_size: [ 8 ] }",
            "dynamic batching preferred size must be <= max batch size for m",
        ),
        (
            "dynamic_batching { priority_levels: 2 }",
            "default priority level must be in range [1, 2] for m",
        ),
        (
            "dynamic_batching { priority_levels: 2 default_priority_level: 1 "
            "priority_queue_policy { key: 3 value { } } }",
            "priority queue policy must have priority level in range [1, 2] for m",
        ),
        (
            "dynamic_batching { preserve_ordering: true priority_levels: 2 "
            "default_priority_level: 1 }",
            "Only one priority level is allowed when 'preserve_ordering' is true for m",
        ),
        (
            "dynamic_batching { preserve_ordering: true default_queue_policy "
            "{ timeout_action: DELAY default_timeout_microseconds: 10 } }",
            "Queue policy can not have DELAY as timeout action when 'preserve_ordering' is "
            "true for m",
        ),
        (
            "max_batch_size: 2 sequence_batching { oldest { preferred_batch_size: [ 4 ] } }",
            "sequence batching preferred batch size must be <= max batch size for m",
        ),
        (
            "sequence_batching { direct { minimum_slot_utilization: 1.5 } }",
            "sequence batching minimum slot utilization must be in range (0.0, 1.0] for m",
        ),
        (
            "sequence_batching { control_input [ { name: \"S\" control [ "
            "{ kind: CONTROL_SEQUENCE_START } ] } ] }",
            "sequence batching must specify either 'int32_false_true', 'fp32_false_true' or "
            "'bool_false_true' for CONTROL_SEQUENCE_START for m",
        ),
        (
            "sequence_batching { control_input [ { name: \"S\" control [ "
            "{ kind: CONTROL_SEQUENCE_START int32_false_true: [ 0 ] } ] } ] }",
            "sequence batching control 'int32_false_true' must have exactly 2 entries for "
            "CONTROL_SEQUENCE_START for m",
        ),
        (
            "sequence_batching { control_input [ { name: \"S\" control [ "
            "{ kind: CONTROL_SEQUENCE_START bool_false_true: [ false, true ] } ] }, "
            "{ name: \"S\" } ] }",
            "sequence batching control tensor 'S' is specified for multiple control kinds for m",
        ),
        (
            "sequence_batching { control_input [ { name: \"C\" control [ "
            "{ kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_FP32 } ] } ] }",
            "unexpected data type for control CONTROL_SEQUENCE_CORRID for m. Allowed data types "
            "are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING",
        ),
        (
            "model_transaction_policy { decoupled: true } response_cache { enable: true }",
            "Response Cache does not currently support model m with 'decoupled' transaction "
            "policy. Please disable the response cache.",
        ),
        (
            "model_metrics { metric_control [ { metric_identifier { family: \"f\" } } ] }",
            "metric control must specify 'histogram_options'",
        ),
    ],
)
def test_validate_model_config_rules(text, message):
    err = error_of(validate_model_config, valid(text))
    assert err.code is Code.INVALID_ARG
    assert err.message == message


ENSEMBLE = (
    'name: "e" platform: "ensemble" version_policy { all { } } '
    'input [ { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] } ] '
)


@pytest.mark.parametrize(
    "text, message",
    [
        ("ensemble_scheduling { }", "must specify 'step' for ensemble 'e'"),
        (
            'ensemble_scheduling { step [ { model_name: "a" } ] }',
            "must specify 'input_map' in step 0 of ensemble 'e'",
        ),
        (
            "instance_group [ { } ] ensemble_scheduling { step [ { } ] }",
            "instance group should not be specified for ensemble 'e'",
        ),
        (
            "optimization { } ensemble_scheduling { step [ { } ] }",
            "optimization should not be specified for ensemble 'e'",
        ),
    ],
)
def test_validate_ensemble_basics(text, message):
    assert error_of(validate_model_config, config(ENSEMBLE + text)).message == message


def test_valid_configs_pass(tmp_path):
    for name in ("simple_py", "big_json", "ens"):
        cfg = loaded(tmp_path, name, (DATA / f"triton_config_{name}.pbtxt").read_text())
        validate_model_config(cfg)
        normalize_instance_groups(cfg)
        validate_instance_groups(cfg)
        validate_model_io_config(cfg)


@pytest.mark.parametrize(
    "groups_text, gpus, message",
    [
        (
            "[ { kind: KIND_GPU } ]",
            0,
            "instance group m_0 of model m has kind KIND_GPU but no GPUs are available",
        ),
        (
            "[ { kind: KIND_GPU gpus: [ 3 ] } ]",
            2,
            "instance group m_0 of model m specifies invalid or unsupported gpu id 3. GPUs with "
            "at least the minimum required CUDA compute compatibility of 6.000000 are: 0, 1",
        ),
        (
            "[ { kind: KIND_CPU gpus: [ 0 ] } ]",
            1,
            "instance group m_0 of model m has kind KIND_CPU but specifies one or more GPUs",
        ),
        (
            "[ { kind: KIND_MODEL gpus: [ 0 ] } ]",
            1,
            "instance group m_0 of model m has kind KIND_MODEL but specifies one or more GPUs",
        ),
        (
            '[ { kind: KIND_CPU profile: [ "0" ] } ]',
            0,
            "instance group m_0 of model m and platform specifies profile field which is only "
            "supported for TensorRT models",
        ),
        (  # Tritium's own bound, counted over groups and their GPUs
            "[ { kind: KIND_CPU count: 1000 }, { kind: KIND_GPU count: 13 gpus: [ 0, 1 ] } ]",
            2,
            "instance groups of model m ask for 1026 instances; at most 1024 instances per "
            "model are supported",
        ),
    ],
)
def test_validate_instance_groups(groups_text, gpus, message):
    cfg = valid(f"instance_group {groups_text}")
    normalize_instance_groups(cfg, gpus=range(gpus))
    err = error_of(validate_instance_groups, cfg, gpus=range(gpus))
    assert err.code is Code.INVALID_ARG
    assert err.message == message


def test_validate_instance_groups_before_normalization():
    err = error_of(validate_instance_groups, valid(""))
    assert err.message == "must specify one or more 'instance group's for m"
    err = error_of(validate_instance_groups, valid('instance_group [ { name: "g" } ]'))
    assert err.code is Code.INTERNAL
    assert err.message == "instance group g of model m has unexpected kind KIND_AUTO"


@pytest.mark.parametrize(
    "io_text, message",
    [
        ('input [ { data_type: TYPE_FP32 dims: [ 1 ] } ]', "model input must specify 'name'"),
        ('input [ { name: "I" dims: [ 1 ] } ]', "model input 'I' must specify 'data_type'"),
        ('output [ { name: "O" data_type: TYPE_FP32 } ]', "model output 'O' must specify 'dims'"),
        (
            'input [ { name: "I" data_type: TYPE_FP32 dims: [ 0 ] } ]',
            "model input 'I' dimension must be integer >= 1, or -1 to indicate a variable-size "
            "dimension",
        ),
        (
            'input [ { name: "I" data_type: TYPE_FP32 dims: [ 4 ] reshape { shape: [ 2, 3 ] } } ]',
            "model input 'I' has different size for dims and reshape",
        ),
        (
            'input [ { name: "I" data_type: TYPE_FP32 dims: [ 4 ] reshape { shape: [ 0 ] } } ]',
            "model input 'I' reshape dimensions must be integer >= 1, or -1 to indicate a "
            "variable-size dimension",
        ),
        (
            'input [ { name: "I" data_type: TYPE_FP32 dims: [ 2, -1 ] '
            "reshape { shape: [ -1, 2, -1 ] } } ]",
            "model input 'I' has different number of variable-size dimensions for dims and reshape",
        ),
        (
            'input [ { name: "I" data_type: TYPE_FP32 dims: [ 1 ] reshape { } } ]',
            "model input 'I' cannot have empty reshape for non-batching model as scalar tensors "
            "are not supported",
        ),
        (
            'input [ { name: "I" data_type: TYPE_INT32 dims: [ 1 ] is_shape_tensor: true } ]',
            "shape tensors are only supported for TensorRT platform",
        ),
        (
            'input [ { name: "I" data_type: TYPE_FP32 format: FORMAT_NHWC dims: [ 2, 2 ] } ]',
            "model input NHWC/NCHW require 3 dims",
        ),
        (
            'input [ { name: "I" data_type: TYPE_FP32 dims: [ 1 ] } ] '
            'batch_input [ { kind: BATCH_ELEMENT_COUNT target_name: "B" data_type: TYPE_FP32 '
            'source_input: "X" } ]',
            "unknown source input name 'X'",
        ),
        (
            'input [ { name: "I" data_type: TYPE_FP32 dims: [ 1 ] } ] '
            'batch_input [ { kind: BATCH_ITEM_SHAPE data_type: TYPE_INT64 source_input: "I" } ]',
            "batch input data type must be TYPE_INT32 or TYPE_FP32",
        ),
        (
            'input [ { name: "I" data_type: TYPE_FP32 dims: [ 1 ] } ] '
            'output [ { name: "O" data_type: TYPE_FP32 dims: [ 1 ] } ] '
            'batch_output [ { kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: "I" '
            'target_name: [ "O", "O" ] } ]',
            "target output name 'O' can only be specified once",
        ),
    ],
)
def test_validate_io(io_text, message):
    err = error_of(validate_model_io_config, valid(io_text))
    assert err.code is Code.INVALID_ARG
    assert err.message == f"{message} for m"


@pytest.mark.parametrize(
    "io_text",
    [
        # each run between wildcards keeps its element count: 2*4 = 8 and 6 = 1*6
        'input [ { name: "I" data_type: TYPE_FP32 dims: [ 2, 4, -1, 6 ] '
        "reshape { shape: [ 8, -1, 1, 6 ] } } ]",
        # a scalar as a reshape of [1] is fine when batching
        'max_batch_size: 4 input [ { name: "I" data_type: TYPE_FP32 dims: [ 1 ] reshape { } } ]',
        # Triton 2.51 loads a model with two inputs of the same name
        'input [ { name: "I" data_type: TYPE_FP32 dims: [ 1 ] }, '
        '{ name: "I" data_type: TYPE_FP32 dims: [ 1 ] } ]',
    ],
)
def test_valid_io(io_text):
    validate_model_io_config(valid(io_text))
