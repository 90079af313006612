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

import asyncio
import ctypes
import json
from pathlib import Path

import numpy as np
import pytest

import tritonserver
from support.llm_fixtures import Reference, llm_weights  # noqa: F401
from support.llm_models import CHAT_TEMPLATE, llm_repository

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
PROMPT = "The quick brown fox"


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


@pytest.fixture(scope="module")
def llm_server(tmp_path_factory: pytest.TempPathFactory,
               llm_weights: dict[str, Path]):  # noqa: F811
    repo = llm_repository(tmp_path_factory.mktemp("frontend_llm"),
                          {"tiny": {"engine": {"max_num_seqs": 4}}}, llm_weights)
    server = tritonserver.Server(model_repository=str(repo)).start(wait_until_ready=True)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def reference(llm_weights: dict[str, Path]) -> Reference:  # noqa: F811
    return Reference(llm_weights["llama"])


def text_of(tensor: tritonserver.Tensor) -> str:
    """One BYTES element read as the frontend reads it: past the 4-byte length, `size` bytes
    from `data_ptr`."""
    assert tensor.shape == [1] and tensor.size >= 4
    return ctypes.string_at(tensor.data_ptr + 4, tensor.size - 4).decode("utf-8")


def count_of(tensor: tritonserver.Tensor) -> int:
    assert tensor.data_type == tritonserver.DataType.UINT32
    return ctypes.cast(tensor.data_ptr, ctypes.POINTER(ctypes.c_uint32))[0]


def ask(server: tritonserver.Server, prompt: str, sampling: dict,
        **flags: bool) -> list[tritonserver.InferenceResponse]:
    """A non-streamed request as the frontend's vLLM converter builds it, its responses."""
    model = server.model("tiny")
    inputs = {"text_input": [prompt], "stream": np.bool_([False]),
              "exclude_input_in_output": np.bool_([True]),
              "sampling_parameters": [json.dumps(sampling)],
              **{name: np.bool_([value]) for name, value in flags.items()}}

    async def collect() -> list[tritonserver.InferenceResponse]:
        return [r async for r in model.async_infer(model.create_request(inputs=inputs))]

    return asyncio.run(collect())


def test_the_2_52_frontends_sampling_parameters_are_served(llm_server, reference):
    assert llm_server.model("tiny").config()["backend"] == "llm"
    # CreateCompletionRequest's dump (less what the frontend excludes): best_of and n at 1.
    completion = {"best_of": 1, "frequency_penalty": 0.0, "ignore_eos": False,
                  "max_tokens": 6, "n": 1, "presence_penalty": 0.0, "temperature": 0,
                  "top_p": 1.0}
    (response,) = ask(llm_server, PROMPT, completion)
    assert response.final and response.error is None
    assert text_of(response.outputs["text_output"]) == reference.greedy_text(PROMPT, 6)[0]
    # A chat request's dump: OpenAI chat's logprobs flag, false, asks for no logprobs.
    prompt = reference.tokenizer.apply_chat_template(
        [{"role": "user", "content": "Hi"}], chat_template=CHAT_TEMPLATE, tokenize=False,
        add_generation_prompt=True)
    chat = {"frequency_penalty": 0.0, "ignore_eos": False, "logprobs": False, "max_tokens": 6,
            "n": 1, "presence_penalty": 0.0, "temperature": 0, "top_p": 1.0}
    (response,) = ask(llm_server, prompt, chat)
    assert list(response.outputs) == ["text_output"]
    assert text_of(response.outputs["text_output"]) == reference.greedy_text(prompt, 6)[0]
    # The flag true: the sampled token's own logprob alone.
    (response,) = ask(llm_server, prompt, {**chat, "logprobs": True, "max_tokens": 3})
    assert [len(entry) for entry in json.loads(text_of(response.outputs["logprobs"]))] == [1] * 3


def test_best_of_other_than_n_is_refused_by_name(llm_server):
    with pytest.raises(tritonserver.InvalidArgumentError, match=r"best_of must be n \(1\), got 2"):
        ask(llm_server, PROMPT, {"best_of": 2, "max_tokens": 2})


def test_return_logprobs_switches_the_logprobs_output_as_the_vllm_backend(llm_server):
    counts = {"return_num_input_tokens": True, "return_num_output_tokens": True}
    sampling = {"max_tokens": 5, "temperature": 0, "logprobs": 2}
    (response,) = ask(llm_server, PROMPT, sampling, return_logprobs=True, **counts)
    entries = json.loads(text_of(response.outputs["logprobs"]))
    assert len(entries) == count_of(response.outputs["num_output_tokens"]) == 5
    assert count_of(response.outputs["num_input_tokens"]) > 0
    # The sampled token, then the top 2 by rank (the sampled one among them, greedy).
    assert all(len(entry) == 2 for entry in entries)
    # Asked by the switch only: the vLLM backend's null.
    (response,) = ask(llm_server, PROMPT, {"max_tokens": 2}, return_logprobs=True)
    assert text_of(response.outputs["logprobs"]) == "null"
    # Switched off: none, whatever the sampling parameters ask.
    (response,) = ask(llm_server, PROMPT, sampling, return_logprobs=False)
    assert "logprobs" not in response.outputs
