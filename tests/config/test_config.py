"""Unit tests for tritium.config: parsing, auto-complete and normalization, instance groups.

Validation is in test_config_validation.py, the JSON form in test_config_json.py.
The expected messages are Triton 2.51's, as read in core/src/model_config_utils.cc and as the
reference server (tools/reference-triton.sh) printed them.
"""

from __future__ import annotations

import pytest
from tritonclient.grpc import model_config_pb2 as mc

from support.config_builders import CPU, DATA, GPU, IO, config, error_of, loaded, make_model
from tritium.config import (
    normalize_instance_groups,
    normalize_model_config,
    parse_config_text,
    read_model_config,
)
from tritium.errors import Code

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
    normalize_instance_groups(cfg, gpus=[0, 1])
    assert groups(cfg) == [("m_0", GPU, 1, [0, 1]), ("m_1", CPU, 1, [5]), ("m_2", GPU, 1, [0, 1])]


def test_preferred_groups():
    gpu_pref = mc.ModelInstanceGroup(kind=GPU, count=4)
    cpu_pref = mc.ModelInstanceGroup(kind=CPU, count=3)
    cfg = config('name: "m" backend: "x"')
    normalize_instance_groups(cfg, [gpu_pref, cpu_pref])  # no GPUs: the GPU preference is skipped
    assert groups(cfg) == [("m", CPU, 3, [])]
    cfg = config('name: "m" backend: "x"')
    normalize_instance_groups(cfg, [gpu_pref, cpu_pref], gpus=[0])
    assert groups(cfg) == [("m", GPU, 4, [0])]
    cfg = config('name: "m" backend: "x" instance_group [ { kind: KIND_CPU } ]')
    normalize_instance_groups(cfg, [cpu_pref])  # an unset count comes from the preference
    assert groups(cfg) == [("m_0", CPU, 3, [])]
