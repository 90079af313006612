"""What the OpenAI frontend's test modules share: the official client on the module's own
`server` (each module starts one with `--openai-port`, its port kept as `openai_port`) and
transformers' reference for the tiny Llama."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from support.llm_fixtures import Reference, llm_weights  # noqa: F401


@pytest.fixture(scope="module")
def client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"http://127.0.0.1:{server.openai_port}/v1", api_key="none",
                         max_retries=0)


@pytest.fixture(scope="module")
def reference(llm_weights: dict[str, Path]) -> Reference:  # noqa: F811
    return Reference(llm_weights["llama"])
