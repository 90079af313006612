"""Unit tests for tritium.config: parsing, auto-complete, validation and the JSON form.

The expected messages are Triton 2.51's, as read in core/src/model_config_utils.cc and as the
reference server (tools/reference-triton.sh) printed them. The fixtures
tests/data/triton_config_<name>.{pbtxt,json} are a config.pbtxt and the body the reference
server returned for it at GET /v2/models/<name>/config (python-backend models whose model.py
defines no auto_complete_config, so the python backend adds nothing of its own).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tritonclient.grpc import model_config_pb2 as mc

from tritium.config import (
    model_config_from_json,
    model_config_to_json,
    normalize_instance_groups,
    normalize_model_config,
    parse_config_text,
    read_model_config,
    validate_instance_groups,
    validate_model_config,
    validate_model_io_config,
)
from tritium.errors import Code, TritonError

DATA = Path(__file__).parent / "data"
IO = """
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
"""


def make_model(root: Path, name: str, config: str | None = None, files=("1/model.py",)) -> Path:
    """A model directory: optional config.pbtxt plus files (a trailing "/" makes a folder)."""
    model = root / name
    model.mkdir(parents=True)
    if config is not None:
        (model / "config.pbtxt").write_text(config)
    for rel in files:
        path = model / rel
        if rel.endswith("/"):
            path.mkdir(parents=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("")
    return model


def loaded(root: Path, name: str, config: str = "", files=("1/model.py",)) -> mc.ModelConfig:
    """Parse and normalize a model the way the repository poll does."""
    path = make_model(root, name, config, files)
    cfg = read_model_config(path, auto_complete=True)
    normalize_model_config(cfg, path)
    return cfg


def config(text: str) -> mc.ModelConfig:
    return parse_config_text(text, "config.pbtxt")


def error_of(fn, *args, **kwargs) -> TritonError:
    with pytest.raises(TritonError) as info:
        fn(*args, **kwargs)
    return info.value


# --- parsing ---------------------------------------------------------------------------------


def test_parse_error_names_file_line_and_column():
    text = (
        'name: "m"\nbackend: "python"\nmax_batch_size: 8\n'
        'input [ { name: "x" data_type: TYPE_FOO } ]\n'
    )
    err = error_of(parse_config_text, text, "/repo/m/config.pbtxt")
    assert err.code is Code.INVALID_ARG
    assert err.message.startswith("failed to read text proto from /repo/m/config.pbtxt:4:32: ")
    assert "has no value named TYPE_FOO" in err.message


def test_parse_error_unknown_field():
    err = error_of(parse_config_text, 'name: "m"\nfoo: 1\n', "p/config.pbtxt")
    assert err.message == (
        'failed to read text proto from p/config.pbtxt:2:1: '
        'Message type "inference.ModelConfig" has no field named "foo".'
    )


def test_parse_rejects_both_batchers():
    err = error_of(parse_config_text, "dynamic_batching {}\nsequence_batching {}\n", "c.pbtxt")
    assert "c.pbtxt:2:1: " in err.message
    assert 'another member of oneof "scheduling_choice"' in err.message


def test_read_missing_config(tmp_path):
    model = make_model(tmp_path, "m")
    assert read_model_config(model, auto_complete=True) == mc.ModelConfig()
    err = error_of(read_model_config, model, auto_complete=False)
    assert err.code is Code.INVALID_ARG
    assert err.message == (
        f"failed to open text file for read {model}/config.pbtxt: No such file or directory"
    )


def test_read_config_parse_error_has_full_path(tmp_path):
    model = make_model(tmp_path, "m", 'name: "m"\nmax_batch_size: "eight"\n')
    err = error_of(read_model_config, model, auto_complete=False)
    assert err.message.startswith(f"failed to read text proto from {model}/config.pbtxt:2:")


# --- auto-complete and normalization ------------------------------------------------------------


def test_missing_config_completes_to_python_model(tmp_path):
    path = make_model(tmp_path, "pymodel")
    cfg = read_model_config(path, auto_complete=True)
    normalize_model_config(cfg, path)
    assert cfg.name == "pymodel"
    assert cfg.backend == "python" and cfg.platform == ""
    assert cfg.default_model_filename == "model.py"
    assert cfg.version_policy.WhichOneof("policy_choice") == "latest"
    assert cfg.version_policy.latest.num_versions == 1
    assert cfg.optimization.input_pinned_memory.enable
    assert cfg.optimization.output_pinned_memory.enable


def test_name_must_match_directory(tmp_path):
    path = make_model(tmp_path, "dir_name", 'name: "other" backend: "python"')
    cfg = read_model_config(path, auto_complete=False)
    err = error_of(normalize_model_config, cfg, path)
    assert err.message == (
        "unexpected directory name 'dir_name' for model 'other', "
        "directory name must equal model name"
    )


@pytest.mark.parametrize(
    "platform, backend, filename",
    [
        ("onnxruntime_onnx", "onnxruntime", "model.onnx"),
        ("pytorch_libtorch", "pytorch", "model.pt"),
        ("tensorrt_plan", "tensorrt", "model.plan"),
        ("tensorflow_savedmodel", "tensorflow", "model.savedmodel"),
        ("tensorflow_graphdef", "tensorflow", "model.graphdef"),
    ],
)
def test_backend_from_platform(tmp_path, platform, backend, filename):
    cfg = loaded(tmp_path, "m", f'platform: "{platform}"', files=("1/",))
    assert (cfg.platform, cfg.backend, cfg.default_model_filename) == (platform, backend, filename)


@pytest.mark.parametrize(
    "backend, platform, filename",
    [
        ("onnxruntime", "onnxruntime_onnx", "model.onnx"),
        ("pytorch", "pytorch_libtorch", "model.pt"),
        ("tensorrt", "tensorrt_plan", "model.plan"),
        ("python", "", "model.py"),
        ("openvino", "", "model.xml"),
    ],
)
def test_platform_and_filename_from_backend(tmp_path, backend, platform, filename):
    cfg = loaded(tmp_path, "m", f'backend: "{backend}"', files=("1/",))
    assert (cfg.platform, cfg.default_model_filename) == (platform, filename)


@pytest.mark.parametrize(
    "file, backend, platform",
    [
        ("1/model.onnx", "onnxruntime", "onnxruntime_onnx"),
        ("1/model.onnx/", "onnxruntime", "onnxruntime_onnx"),  # large ONNX models are folders
        ("1/model.pt", "pytorch", "pytorch_libtorch"),
        ("1/model.plan", "tensorrt", "tensorrt_plan"),
        ("1/model.savedmodel/", "tensorflow", "tensorflow_savedmodel"),
        ("1/model.graphdef", "tensorflow", "tensorflow_graphdef"),
        ("1/model.xml", "openvino", ""),
        ("1/model.py", "python", ""),
    ],
)
def test_backend_from_version_folder(tmp_path, file, backend, platform):
    cfg = loaded(tmp_path, "m", IO, files=(file,))
    assert (cfg.backend, cfg.platform) == (backend, platform)


def test_only_first_version_folder_by_name_is_inspected(tmp_path):
    # "10" sorts before "9", as in Triton's std::set of folder names.
    cfg = loaded(tmp_path, "m", "", files=("10/model.onnx", "9/model.py"))
    assert cfg.backend == "onnxruntime"


def test_file_of_wrong_kind_is_not_recognised(tmp_path):
    err = error_of(loaded, tmp_path, "m", "", files=("1/model.pt/",))
    assert err.message == (
        "Invalid model name: Could not determine backend for model 'm' with no backend in "
        "model configuration. Expected model name of the form 'model.<backend_name>'."
    )


def test_custom_backend_from_model_name(tmp_path):
    cfg = loaded(tmp_path, "add.identity", "", files=("1/",))
    assert cfg.backend == "identity"
    assert cfg.default_model_filename == "model.identity"


def test_backend_inferred_even_without_auto_complete(tmp_path):
    # Triton 2.51 with --disable-auto-complete-config still loads this as a python model.
    path = make_model(tmp_path, "m", IO)
    cfg = read_model_config(path, auto_complete=False)
    normalize_model_config(cfg, path)
    assert cfg.backend == "python"


def test_ensemble_is_not_given_a_backend_or_optimization(tmp_path):
    cfg = loaded(tmp_path, "ens", (DATA / "triton_config_ens.pbtxt").read_text(), files=("1/",))
    assert cfg.platform == "ensemble" and cfg.backend == ""
    assert not cfg.HasField("optimization")
    normalize_instance_groups(cfg)
    assert len(cfg.instance_group) == 0


def test_dynamic_batching_preferred_size_defaults_to_max_batch_size(tmp_path):
    cfg = loaded(tmp_path, "a", f"max_batch_size: 8 dynamic_batching {{ }} {IO}")
    assert list(cfg.dynamic_batching.preferred_batch_size) == [8]
    cfg = loaded(tmp_path, "b", f"dynamic_batching {{ }} {IO}")
    assert list(cfg.dynamic_batching.preferred_batch_size) == []
    cfg = loaded(tmp_path, "c", "max_batch_size: 8 dynamic_batching { preferred_batch_size: 2 }")
    assert list(cfg.dynamic_batching.preferred_batch_size) == [2]


def test_sequence_batching_defaults(tmp_path):
    cfg = loaded(tmp_path, "m", "max_batch_size: 2 sequence_batching { oldest { } }")
    assert cfg.sequence_batching.max_sequence_idle_microseconds == 1_000_000
    assert list(cfg.sequence_batching.oldest.preferred_batch_size) == [2]


def test_given_values_are_kept(tmp_path):
    cfg = loaded(
        tmp_path,
        "m",
        "version_policy { all { } } optimization { input_pinned_memory { enable: false } }",
    )
    assert cfg.version_policy.WhichOneof("policy_choice") == "all"
    assert not cfg.optimization.input_pinned_memory.enable
    assert cfg.optimization.output_pinned_memory.enable


# --- instance groups ----------------------------------------------------------------------------

CPU, GPU = mc.ModelInstanceGroup.KIND_CPU, mc.ModelInstanceGroup.KIND_GPU


def groups(cfg: mc.ModelConfig) -> list[tuple[str, int, int, list[int]]]:
    return [(g.name, g.kind, g.count, list(g.gpus)) for g in cfg.instance_group]


def test_no_instance_group_gives_one_named_after_the_model():
    cfg = config('name: "m" backend: "python"')
    normalize_instance_groups(cfg)
    assert groups(cfg) == [("m", CPU, 1, [])]


def test_instance_group_names_kinds_and_counts():
    cfg = config(
        'name: "m" backend: "python" instance_group [ { kind: KIND_AUTO }, '
        '{ name: "named" count: 3 }, { count: -2 kind: KIND_CPU } ]'
    )
    normalize_instance_groups(cfg)
    assert groups(cfg) == [("m_0", CPU, 1, []), ("named", CPU, 3, []), ("m_2", CPU, 1, [])]


def test_onnxruntime_cpu_groups_default_to_two_instances():
    cfg = config('name: "m" backend: "onnxruntime" instance_group [ { kind: KIND_CPU } ]')
    normalize_instance_groups(cfg)
    assert groups(cfg) == [("m_0", CPU, 2, [])]


def test_instance_groups_with_gpus():
    cfg = config(
        'name: "m" backend: "python" instance_group [ { }, { gpus: [ 5 ] }, { kind: KIND_GPU } ]'
    )
    normalize_instance_groups(cfg, gpu_count=2)
    assert groups(cfg) == [("m_0", GPU, 1, [0, 1]), ("m_1", CPU, 1, [5]), ("m_2", GPU, 1, [0, 1])]


def test_preferred_groups():
    gpu_pref = mc.ModelInstanceGroup(kind=GPU, count=4)
    cpu_pref = mc.ModelInstanceGroup(kind=CPU, count=3)
    cfg = config('name: "m" backend: "x"')
    normalize_instance_groups(cfg, [gpu_pref, cpu_pref])  # no GPUs: the GPU preference is skipped
    assert groups(cfg) == [("m", CPU, 3, [])]
    cfg = config('name: "m" backend: "x"')
    normalize_instance_groups(cfg, [gpu_pref, cpu_pref], gpu_count=1)
    assert groups(cfg) == [("m", GPU, 4, [0])]
    cfg = config('name: "m" backend: "x" instance_group [ { kind: KIND_CPU } ]')
    normalize_instance_groups(cfg, [cpu_pref])  # an unset count comes from the preference
    assert groups(cfg) == [("m_0", CPU, 3, [])]


# --- validation ---------------------------------------------------------------------------------


def valid(text: str) -> mc.ModelConfig:
    """A config as validation sees it: name, backend and version policy present."""
    policy = "version_policy { latest { num_versions: 1 } }"
    return config(f'name: "m" backend: "python" {policy} {text}')


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
    "groups_text, gpu_count, message",
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
    ],
)
def test_validate_instance_groups(groups_text, gpu_count, message):
    cfg = valid(f"instance_group {groups_text}")
    normalize_instance_groups(cfg, gpu_count=gpu_count)
    err = error_of(validate_instance_groups, cfg, gpu_count=gpu_count)
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
        # tritonclient's schema is newer than Triton 2.51's, which has no such field.
        ours["ensemble_scheduling"].pop("max_inflight_requests")
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
