"""The llm backend on decoder architectures whose attention is not Llama's: sliding windows on
every layer (Mistral, Phi-3) or alternating with full attention and soft-capped (Gemma-2, run
with eager attention), tied embeddings and q/k norms (Qwen3), partial rotary with parallel
residuals (GPT-NeoX), learned positions (OPT), a mixture of experts (Mixtral). Each is served by
a real server and held to transformers' own greedy generate, alone and with prompts of
different lengths decoding in one batch, past the sliding window."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from support.llm_fixtures import PROMPTS, Reference, generate
from support.llm_models import ARCHITECTURES, SLIDING_WINDOW, build_model, llm_repository
from support.server_process import ServerProcess

# Longer than the window as prompts, and every answer decodes past it.
LONG_PROMPTS = [PROMPTS[2], PROMPTS[5], PROMPTS[0], PROMPTS[3]]
MAX_TOKENS = 3 * SLIDING_WINDOW


@pytest.fixture(scope="module")
def weights(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("architectures")
    return {family: build_model(base / family, family, seed=index)
            for index, family in enumerate(ARCHITECTURES)}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, weights: dict[str, Path]):
    models = {family: {"family": family} for family in ARCHITECTURES}
    repo = llm_repository(tmp_path_factory.mktemp("llm_repo"), models, weights)
    process = ServerProcess([repo])
    # torch, transformers and seven models on a loaded two-core machine: minutes, at worst.
    process.start(timeout=300)
    try:
        yield process
    finally:
        process.stop()


def _greedy(server: ServerProcess, model: str, prompt: str) -> str:
    status, answer = generate(server, model, {"text_input": prompt, "max_tokens": MAX_TOKENS,
                                              "temperature": 0, "exclude_input_in_output": True})
    assert status == 200, answer
    return answer["text_output"]


@pytest.mark.parametrize("family", list(ARCHITECTURES))
def test_greedy_output_equals_transformers_alone_and_batched(server, weights, family):
    reference = Reference(weights[family])
    expected = [reference.greedy_text(prompt, MAX_TOKENS)[0] for prompt in LONG_PROMPTS]
    assert len(set(expected)) == len(expected)  # the model does not answer one text to all
    alone = _greedy(server, family, LONG_PROMPTS[0])
    assert alone == expected[0], family
    with ThreadPoolExecutor(len(LONG_PROMPTS)) as pool:
        batched = list(pool.map(lambda prompt: _greedy(server, family, prompt), LONG_PROMPTS))
    assert batched == expected, family
