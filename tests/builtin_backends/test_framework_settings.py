"""Model parameters reach the frameworks: the session options onnxruntime really runs with, a
TorchScript module shared by instances, and parameters Triton would refuse refused here too."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from test_framework_batches import PT_CONFIG, load

from support import onnx_models, torch_models
from support.models import write_model
from tritium.builtin_backends.framework import import_framework
from tritium.errors import Code, TritonError


def test_onnxruntime_sessions_use_the_configured_options(tmp_path: Path) -> None:
    write_model(tmp_path, "m", 'platform: "onnxruntime_onnx"\n'
                'instance_group [ { count: 2 kind: KIND_CPU } ]\n'
                'optimization { graph { level: 2 } }\n'
                'parameters { key: "intra_op_thread_count" value: { string_value: "1" } }\n'
                'parameters { key: "inter_op_thread_count" value: { string_value: "2" } }\n'
                'parameters { key: "execution_mode" value: { string_value: "1" } }\n'
                'parameters { key: "enable_mem_pattern" value: { string_value: "false" } }\n'
                'parameters { key: "share_session_between_instances"'
                ' value: { string_value: "true" } }\n')
    onnx_models.save(onnx_models.add_sub(), tmp_path / "m" / "1" / "model.onnx")
    model = load(tmp_path / "m")
    try:
        ort = model.handle.backend.state
        sessions = [instance.handle.state.session for instance in model.instances]
        assert len(sessions) == 2 and sessions[0] is sessions[1]  # one per instance group
        options = sessions[0].get_session_options()
        assert options.intra_op_num_threads == 1 and options.inter_op_num_threads == 2
        assert options.execution_mode == ort.ExecutionMode.ORT_PARALLEL
        assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        assert options.enable_mem_pattern is False
    finally:
        model.unload()


def test_onnxruntime_instances_have_their_own_sessions_by_default(tmp_path: Path) -> None:
    onnx_models.save(onnx_models.add_sub(), tmp_path / "m" / "1" / "model.onnx")
    model = load(tmp_path / "m")
    try:
        sessions = [instance.handle.state.session for instance in model.instances]
        assert len(sessions) == 2 and sessions[0] is not sessions[1]
    finally:
        model.unload()


@pytest.mark.parametrize("sharing", ["true", "false"])
def test_pytorch_weight_sharing(tmp_path: Path, sharing: str, caplog) -> None:
    write_model(tmp_path, "m", PT_CONFIG + 'instance_group [ { count: 2 kind: KIND_CPU } ]\n'
                f'parameters {{ key: "ENABLE_WEIGHT_SHARING"'
                f' value: {{ string_value: "{sharing}" }} }}\n')
    torch_models.save(torch_models.AddSub(), tmp_path / "m" / "1" / "model.pt")
    with caplog.at_level(logging.INFO, logger="tritium.backend.pytorch"):
        model = load(tmp_path / "m")
    try:
        first, second = (instance.handle.state.module for instance in model.instances)
        assert (first is second) == (sharing == "true")
    finally:
        model.unload()
    # Triton's libtorch backend's lines, which its QA tests count.
    state = "enabled" if sharing == "true" else "disabled"
    messages = [record.getMessage() for record in caplog.records]
    for line in (f"Weight sharing is {state} for model instance 'm'",
                 "Optimized execution is enabled for model instance 'm'",
                 "Cache Cleaning is disabled for model instance 'm'",
                 "Inference Mode is enabled for model instance 'm'",
                 "cuDNN is enabled for model instance 'm'"):
        assert messages.count(line) == 1, (line, messages)
    assert messages.count("Reusing TorchScript model for instance 'm'") == (sharing == "true")


def test_bad_parameter_values_are_refused(tmp_path: Path) -> None:
    write_model(tmp_path, "pt", PT_CONFIG +
                'parameters { key: "INFERENCE_MODE" value: { string_value: "maybe" } }\n')
    torch_models.save(torch_models.AddSub(), tmp_path / "pt" / "1" / "model.pt")
    with pytest.raises(TritonError) as info:
        load(tmp_path / "pt")
    assert info.value.code == Code.INVALID_ARG
    assert "'maybe'" in info.value.message and "INFERENCE_MODE" in info.value.message

    write_model(tmp_path, "ort", 'platform: "onnxruntime_onnx"\n'
                'parameters { key: "intra_op_thread_count" value: { string_value: "many" } }\n')
    onnx_models.save(onnx_models.add_sub(), tmp_path / "ort" / "1" / "model.onnx")
    with pytest.raises(TritonError) as info:
        load(tmp_path / "ort")
    assert "'many'" in info.value.message and "intra_op_thread_count" in info.value.message


def test_a_missing_framework_is_unavailable_with_the_extra_to_install() -> None:
    with pytest.raises(TritonError) as info:
        import_framework("tritium_no_such_framework", "imaginary", "imaginary")
    assert info.value.code == Code.UNAVAILABLE
    assert "pip install 'tritium[imaginary]'" in info.value.message
