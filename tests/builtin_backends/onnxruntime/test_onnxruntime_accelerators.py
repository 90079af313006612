"""The onnxruntime backend's optimization settings, as Triton 2.51's L0_onnx_optimization checks
them: the session-option lines logged at --log-verbose=1, GPU execution accelerators checked when
a KIND_GPU instance loads (the server believes it has an H200, onnxruntime is the CPU build) and
ignored for KIND_CPU instances, the provider options a GPU session gets from them, and (with a
stand-in for onnxruntime-gpu) a TensorRT provider that does not start refusing the load."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import onnxruntime
import pytest
import tritonclient.http as httpclient
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from support import onnx_models
from support.gpu import fake_gpu_env
from support.models import infer_arrays, write_model
from support.server_process import ServerProcess
from tritium.builtin_backends.onnxruntime.accelerators import gpu_accelerators
from tritium.builtin_backends.onnxruntime.providers import check_session, session_providers
from tritium.errors import Code, TritonError

cpu_onnxruntime = pytest.mark.skipif(
    "CUDAExecutionProvider" in onnxruntime.get_available_providers(),
    reason="checks what the CPU build of onnxruntime does with KIND_GPU instances",
)


def accelerator(name: str, **parameters: str) -> str:
    return accelerators((name, parameters))


def accelerators(*chosen: tuple[str, dict[str, str]]) -> str:
    """`optimization` with these GPU execution accelerators, in order."""
    entries = ", ".join(
        f'{{ name: "{name}" '
        + " ".join(f'parameters {{ key: "{k}" value: "{v}" }}' for k, v in parameters.items())
        + " }"
        for name, parameters in chosen)
    return ("optimization { execution_accelerators { gpu_execution_accelerator: "
            f"[ {entries} ] }} }}\n")


def parameter(key: str, value: str) -> str:
    return f'parameters {{ key: "{key}" value: {{ string_value: "{value}" }} }}\n'


# Configurations Triton's backend refuses when it creates a KIND_GPU instance, and its message.
BAD_GPU_SETTINGS = {
    "unknown_gpu": (accelerator("unknown_gpu"),
                    "Invalid argument: unknown Execution Accelerator 'unknown_gpu' is requested"),
    "trt_unknown_param": (
        accelerator("tensorrt", precision_mode="FP16", segment_size="1"),
        "Invalid argument: unknown parameter 'segment_size' is provided for TensorRT Execution "
        "Accelerator"),
    "trt_invalid_param": (
        accelerator("tensorrt", precision_mode="FP16", max_workspace_size_bytes="abc"),
        "Invalid argument: failed to convert 'abc' to unsigned long long integral number"),
    "trt_precision": (accelerator("tensorrt", precision_mode="FP8"),
                      "Invalid argument: unsupported precision mode 'FP8' is requested"),
    "cuda_bool": (accelerator("cuda", use_ep_level_unified_stream="maybe"),
                  "Invalid argument: failed to convert 'maybe' to boolean"),
    "arena_strategy": (parameter("arena_extend_strategy", "2"),
                       "Invalid argument: unsupported arena_extend_strategy value '2' is "
                       "requested"),
}
GOOD_TRT = accelerator("tensorrt", precision_mode="FP16", trt_engine_cache_enable="1",
                       max_workspace_size_bytes="1073741824")
ARENA_PARAMETERS = (parameter("enable_mem_arena", "1") + parameter("enable_mem_pattern", "0")
                    + parameter("memory.enable_memory_arena_shrinkage", "cpu:0"))


def write_onnx(repo: Path, name: str, settings: str, kind: str) -> None:
    write_model(repo, name, 'platform: "onnxruntime_onnx"\nmax_batch_size: 8\n'
                f"instance_group [ {{ count: 2 kind: {kind} }} ]\n{settings}")
    onnx_models.save(onnx_models.add_sub(), repo / name / "1" / "model.onnx")


def test_session_options_are_logged_as_tritons_verbose_lines(tmp_path: Path) -> None:
    write_onnx(tmp_path, "arena", ARENA_PARAMETERS, "KIND_CPU")
    with ServerProcess([tmp_path], "--log-verbose=1") as server:
        messages = server.log_messages()
    for line in ("Configuring enable_mem_arena to 1", "Configuring enable_mem_pattern to 0",
                 "Configuring memory.enable_memory_arena_shrinkage to cpu:0"):
        assert line in messages, line


@cpu_onnxruntime
def test_gpu_accelerators_are_checked_for_kind_gpu_instances_only(tmp_path: Path) -> None:
    for name, (settings, _) in BAD_GPU_SETTINGS.items():
        write_onnx(tmp_path, name, settings, "KIND_GPU")
        write_onnx(tmp_path, f"{name}_cpu", settings, "KIND_CPU")
    write_onnx(tmp_path, "trt", GOOD_TRT, "KIND_GPU")
    with ServerProcess([tmp_path], "--exit-on-error=false", "--strict-readiness=false",
                       env=fake_gpu_env()) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        a = np.arange(8, dtype=np.float32).reshape(2, 4)
        b = np.ones((2, 4), np.float32)
        for name in BAD_GPU_SETTINGS:
            assert not client.is_model_ready(name), name
            # Triton's backend reads GPU accelerators for GPU instances only.
            result = infer_arrays(httpclient, server.http_url, f"{name}_cpu",
                                  {"INPUT0": a, "INPUT1": b})
            np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
        assert not client.is_model_ready("trt")
        log = server.log()
    for name, (_, message) in BAD_GPU_SETTINGS.items():
        assert f"failed to load '{name}' version 1: {message}" in log, name
    # A well-formed TensorRT accelerator gets as far as the missing CUDA provider. The two
    # instances load side by side and the load error is the first to fail, either of them (the
    # likeliest cause of this check failing twice in full runs on Python 3.12: not confirmed).
    version = re.escape(onnxruntime.__version__)
    assert re.search(
        r"failed to load 'trt' version 1: Unavailable: instance trt_0_[01] of model trt is "
        rf"KIND_GPU \(device 0\) but the installed onnxruntime {version} has no "
        r"CUDAExecutionProvider", log), [line for line in log.splitlines() if "trt" in line]


def config(text: str) -> mc.ModelConfig:
    return text_format.Parse(text, mc.ModelConfig())


def test_tensorrt_parameters_become_tensorrt_provider_options() -> None:
    chosen = gpu_accelerators(config(accelerators(
        ("tensorrt", {"precision_mode": "FP16", "trt_max_partition_iterations": "1000",
                      "trt_engine_cache_path": "/cache",
                      "max_workspace_size_bytes": "1073741824"}),
        ("cuda", {"cudnn_conv_use_max_workspace": "0"}))))
    assert chosen.providers(1) == [
        ("TensorrtExecutionProvider", {
            "trt_fp16_enable": "1", "trt_max_partition_iterations": "1000",
            "trt_engine_cache_path": "/cache", "trt_max_workspace_size": "1073741824",
            "device_id": "1"}),
        ("CUDAExecutionProvider", {"cudnn_conv_use_max_workspace": "0", "device_id": "1"}),
    ]
    # FP32 is TensorRT's default: no option for it.
    assert gpu_accelerators(config(accelerator("tensorrt", precision_mode="FP32"))).tensorrt == {}


def test_cuda_options_come_from_the_accelerator_then_the_model_parameters() -> None:
    chosen = gpu_accelerators(config(
        accelerator("cuda", use_ep_level_unified_stream="1", arena_extend_strategy="x")
        + parameter("cudnn_conv_algo_search", "1") + parameter("arena_extend_strategy", "1")
        + parameter("gpu_mem_limit", "18446744073709551614")))
    assert chosen.tensorrt is None
    assert chosen.providers(0) == [("CUDAExecutionProvider", {
        "use_ep_level_unified_stream": "1", "cudnn_conv_algo_search": "HEURISTIC",
        "arena_extend_strategy": "kSameAsRequested", "gpu_mem_limit": "18446744073709551614",
        "do_copy_in_default_stream": "1", "device_id": "0"})]
    # Without model parameters the accelerator's options stand and onnxruntime's defaults rest.
    assert gpu_accelerators(config(accelerator("cuda", gpu_mem_limit="1024"))).cuda == {
        "gpu_mem_limit": "1024"}


def test_unknown_accelerators_and_bad_values_are_invalid_arguments() -> None:
    for settings, message in BAD_GPU_SETTINGS.values():
        with pytest.raises(TritonError) as info:
            gpu_accelerators(config(settings))
        assert info.value.code == Code.INVALID_ARG
        assert message.removeprefix("Invalid argument: ") in info.value.message


def gpu_instance(settings: str) -> SimpleNamespace:
    model = SimpleNamespace(name="m", config=config(settings))
    return SimpleNamespace(name="m_0_0", model=model, kind="KIND_GPU", device_id=0)


def test_tensorrt_that_onnxruntime_cannot_start_fails_the_load(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # What onnxruntime-gpu answers where TensorRT's libraries are missing: it lists the
    # provider, then builds the session on CUDA alone (the gpu tests meet the real one).
    gpu_ort = SimpleNamespace(__version__="1.20.0", get_available_providers=lambda: [
        "TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"])
    instance = gpu_instance(GOOD_TRT)
    providers = session_providers(gpu_ort, instance)  # type: ignore[arg-type]
    assert [p if isinstance(p, str) else p[0] for p in providers] == [
        "TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]
    fallen_back = SimpleNamespace(
        get_providers=lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    with pytest.raises(TritonError) as info:
        check_session(gpu_ort, fallen_back, instance, providers)  # type: ignore[arg-type]
    assert info.value.code == Code.UNAVAILABLE
    assert ("instance m_0_0 of model m is KIND_GPU (device 0) but onnxruntime 1.20.0 could not "
            "start its TensorrtExecutionProvider (the session would run on "
            "CUDAExecutionProvider, CPUExecutionProvider)") in info.value.message
    started = SimpleNamespace(
        get_providers=lambda: [p[0] for p in providers[:-1]] + ["CPUExecutionProvider"],
        get_provider_options=lambda: {"CUDAExecutionProvider": {"device_id": "0",
                                                                 "gpu_mem_limit": "1024"}})
    with caplog.at_level(logging.DEBUG, "tritium.backend.onnxruntime"):
        check_session(gpu_ort, started, instance, providers)  # type: ignore[arg-type]
    assert caplog.messages == [
        "TensorRT Execution Accelerator is set for 'm' on device 0",
        "CUDA Execution Accelerator is set for 'm' on device 0 with options: "
        "device_id=0;gpu_mem_limit=1024"]
