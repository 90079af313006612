"""The in-process API as Triton's OpenAI frontend (server repo `python/openai`, 2.52 to 2.71)
drives it, on Tritium.

That frontend is written purely on `tritonserver`: it names the response class by Triton's module
path in annotations read at import, serves `Server.metrics()` as its /metrics (its tests look for
the CPU families there), reads each model's `config()["backend"]`, and sends the vLLM backend's
tensors with `Model.create_request` / `async_infer`: `sampling_parameters` as the JSON dump of the
OpenAI request (2.52 leaves `best_of: 1` and chat's `logprobs: false` in it), `return_logprobs`
and `return_num_*_tokens` (2.69+). It reads text and token counts straight from each output's
`data_ptr` and `size`. These tests make the same calls on an llm-backend model.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import tritonserver

# Where Triton's package defines each class it exports (its __init__ imports them from there).
TRITON_MODULE_PATHS = {
    "_dlpack": ["DLDeviceType"],
    "_memorybuffer": ["MemoryBuffer", "MemoryType"],
    "_model": ["Model", "ModelBatchFlag", "ModelTxnPropertyFlag"],
    "_request": ["InferenceRequest"],
    "_response": ["InferenceResponse"],
    "_server": ["InstanceGroupKind", "LogFormat", "MetricFormat", "ModelControlMode", "Options",
                "RateLimiterResource", "RateLimitMode", "Server"],
    "_tensor": ["DataType", "Tensor"],
}


def test_the_api_classes_are_reachable_by_tritons_module_paths():
    # The frontend's engine/utils/triton.py annotates with
    # tritonserver._api._response.InferenceResponse, evaluated when it is imported.
    for module, names in TRITON_MODULE_PATHS.items():
        for name in names:
            assert getattr(getattr(tritonserver._api, module), name) is getattr(tritonserver, name)


@pytest.mark.parametrize("cpu_metrics", [True, False])
def test_server_metrics_carry_the_cpu_families_as_tritons_do(tmp_path: Path, cpu_metrics: bool):
    server = tritonserver.Server(model_repository=str(tmp_path), cpu_metrics=cpu_metrics,
                                 gpu_metrics=False).start(wait_until_ready=True)
    try:
        text = server.metrics()
    finally:
        server.stop()
    values = {line.split()[0]: float(line.split()[1]) for line in text.splitlines()
              if line.startswith("nv_cpu_")}
    if not cpu_metrics:
        assert values == {}
        return
    assert set(values) == {"nv_cpu_utilization", "nv_cpu_memory_total_bytes",
                           "nv_cpu_memory_used_bytes"}
    assert 0 <= values["nv_cpu_utilization"] <= 1
    assert 0 < values["nv_cpu_memory_used_bytes"] <= values["nv_cpu_memory_total_bytes"]

