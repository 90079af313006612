"""The llm backend on a GPU (marked `gpu`: skipped with the reason where torch sees no CUDA GPU):
a KIND_GPU instance runs its engine on cuda:<device_id>, in float32 token for token what
transformers' greedy generate gives on the CPU, over the generate extension and the OpenAI
frontend, alone and eight at a time; in bfloat16 deterministic and well formed; its KV cache in
GPU memory."""

from __future__ import annotations

import json
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from support.gpu import gpu, gpu_memory
from support.llm_fixtures import PROMPTS, Reference, generate, llm_weights  # noqa: F401
from support.llm_models import build_model, llm_repository
from support.server_process import ServerProcess, openai_server

pytestmark = [*gpu]

ON_GPU = "instance_group [ { kind: KIND_GPU gpus: [ 0 ] } ]\n"
# The KV model: 2 layers x 4 KV heads x 64 dims, float32: 4 KiB of keys and values per token,
# so 32 sequences of 512 tokens hold 64 MiB of cache.
KV_ROWS, KV_TOKENS = 32, 512


@pytest.fixture(scope="module")
def kv_weights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_model(tmp_path_factory.mktemp("kv_weights") / "llama", "llama", hidden_size=256,
                       num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=512)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, llm_weights: dict[str, Path],
           kv_weights: Path):
    repo = llm_repository(tmp_path_factory.mktemp("llm_gpu_repo"), {
        "f32": {"family": "llama", "engine": {"dtype": "float32", "max_num_seqs": 8},
                "config": ON_GPU},
        "bf16": {"family": "llama", "engine": {"dtype": "bfloat16", "max_num_seqs": 8},
                 "config": ON_GPU},
        "kv": {"family": "kv", "engine": {"max_num_seqs": KV_ROWS}, "config": ON_GPU},
    }, {**llm_weights, "kv": kv_weights})
    with openai_server(repo) as process:
        yield process


@pytest.fixture(scope="module")
def reference(llm_weights: dict[str, Path]) -> Reference:
    return Reference(llm_weights["llama"])  # on the CPU, in float32


def _greedy(server: ServerProcess, model: str, prompt: str, max_tokens: int,
            **extra: Any) -> dict[str, Any]:
    status, body = generate(server, model, {
        "text_input": prompt, "exclude_input_in_output": True, "max_tokens": max_tokens,
        "temperature": 0, **extra})
    assert status == 200, body
    return body


def _completion(server: ServerProcess, model: str, prompt: str, max_tokens: int) -> str:
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.openai_port}/v1/completions", method="POST",
        headers={"content-type": "application/json"},
        data=json.dumps({"model": model, "prompt": prompt, "max_tokens": max_tokens,
                         "temperature": 0}).encode())
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())["choices"][0]["text"]


def test_instances_run_on_the_gpu_in_their_dtype(server):
    log = server.log()
    assert "f32_0_0: llm engine on cuda:0, weights in float32" in log
    assert "bf16_0_0: llm engine on cuda:0, weights in bfloat16" in log


def test_float32_greedy_equals_transformers_on_the_cpu_one_at_a_time(server, reference):
    for prompt in PROMPTS[:4]:
        expected, _ = reference.greedy_text(prompt, 24)
        assert _greedy(server, "f32", prompt, 24)["text_output"] == expected, prompt
        assert _completion(server, "f32", prompt, 24) == expected, prompt


def test_float32_greedy_equals_transformers_with_eight_at_once(server, reference):
    expected = [reference.greedy_text(prompt, 32)[0] for prompt in PROMPTS]
    with ThreadPoolExecutor(len(PROMPTS)) as pool:
        generated = list(pool.map(
            lambda p: _greedy(server, "f32", p, 32)["text_output"], PROMPTS))
        completed = list(pool.map(lambda p: _completion(server, "f32", p, 32), PROMPTS))
    assert generated == expected
    assert completed == expected


def test_bfloat16_is_deterministic_and_well_formed(server):
    first = [_greedy(server, "bf16", p, 16)["text_output"] for p in PROMPTS[:4]]
    again = [_greedy(server, "bf16", p, 16)["text_output"] for p in PROMPTS[:4]]
    assert first == again
    with ThreadPoolExecutor(len(PROMPTS)) as pool:
        answers = list(pool.map(lambda p: _greedy(
            server, "bf16", p, 20, ignore_eos=True, return_num_output_tokens=True,
            return_finish_reason=True), PROMPTS))
    for answer in answers:
        assert answer["finish_reason"] == "length", answer
        assert answer["num_output_tokens"] == 20, answer
        assert isinstance(answer["text_output"], str)


def test_the_kv_cache_is_gpu_memory(server):
    _greedy(server, "kv", "T", 4)  # the engine's first step: CUDA context and kernels ready
    used_before, process_before = gpu_memory(server.process.pid)
    assert process_before is None or process_before > 0
    # KV_ROWS sequences of KV_TOKENS tokens: the slots grow to 64 MiB of keys and values.
    with ThreadPoolExecutor(KV_ROWS) as pool:
        started = time.monotonic()
        answers = list(pool.map(lambda i: _greedy(
            server, "kv", "T", KV_TOKENS - 8, ignore_eos=True, return_num_output_tokens=True),
            range(KV_ROWS)))
    assert all(a["num_output_tokens"] == KV_TOKENS - 8 for a in answers)
    used_after, process_after = gpu_memory(server.process.pid)
    grown = 48 * 2**20
    if process_before is not None and process_after is not None:
        # The server's own figure: other test workers' processes come and go on this GPU.
        assert process_after - process_before >= grown, (process_before, process_after)
    else:
        assert used_after - used_before >= grown, (
            used_before, used_after, time.monotonic() - started)
