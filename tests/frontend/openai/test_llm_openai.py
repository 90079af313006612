"""The OpenAI-compatible frontend (--openai-port) driven by the official `openai` client."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import openai
import pytest

from support.llm_fixtures import PROMPTS, Reference, llm_weights  # noqa: F401
from support.llm_models import llm_repository
from support.models import identity_config, write_model
from support.server_process import openai_server

MESSAGES = [{"role": "system", "content": "You are tiny."},
            {"role": "user", "content": "Héllo, who are you?"}]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, llm_weights: dict[str, Path]):
    repo = llm_repository(tmp_path_factory.mktemp("openai_repo"),
                          {"tiny": {"family": "llama"}}, llm_weights)
    # A model on another backend: not offered as an OpenAI model.
    write_model(repo, "identity", identity_config("identity", "TYPE_INT32", max_batch_size=0))
    with openai_server(repo) as process:
        yield process


def _chat_prompt(reference: Reference) -> str:
    return reference.tokenizer.apply_chat_template(MESSAGES, tokenize=False,
                                                   add_generation_prompt=True)


def test_models_lists_the_llm_models_only(client):
    assert [m.id for m in client.models.list().data] == ["tiny"]
    assert client.models.retrieve("tiny").id == "tiny"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("identity")


def test_completion_equals_transformers_greedy(client, reference):
    expected, count = reference.greedy_text(PROMPTS[2], 20)
    result = client.completions.create(model="tiny", prompt=PROMPTS[2], max_tokens=20,
                                       temperature=0)
    choice = result.choices[0]
    assert choice.text == expected
    assert choice.finish_reason == ("stop" if count < 20 else "length")
    prompt_tokens = len(reference.tokenizer(PROMPTS[2]).input_ids)
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (prompt_tokens, count)
    assert result.usage.total_tokens == prompt_tokens + count
    assert result.object == "text_completion" and result.model == "tiny"


def test_streamed_completion(client, reference):
    expected, count = reference.greedy_text(PROMPTS[0], 16)
    chunks = list(client.completions.create(
        model="tiny", prompt=PROMPTS[0], max_tokens=16, temperature=0, stream=True,
        stream_options={"include_usage": True}))
    texts = [c.choices[0].text for c in chunks if c.choices]
    assert len(texts) > 2
    assert "".join(texts) == expected
    reasons = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert reasons[-1] in ("stop", "length") and set(reasons[:-1]) == {None}
    assert chunks[-1].usage.completion_tokens == count


def test_chat_uses_the_tokenizers_chat_template(client, reference):
    expected, count = reference.greedy_text(_chat_prompt(reference), 24)
    result = client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=24,
                                            temperature=0)
    message = result.choices[0].message
    assert (message.role, message.content) == ("assistant", expected)
    assert result.usage.completion_tokens == count
    assert result.object == "chat.completion"


def test_streamed_chat(client, reference):
    expected, _ = reference.greedy_text(_chat_prompt(reference), 24)
    chunks = list(client.chat.completions.create(
        model="tiny", messages=MESSAGES, max_completion_tokens=24, temperature=0, stream=True))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == expected
    assert chunks[-1].choices[0].finish_reason in ("stop", "length")
    assert all(c.object == "chat.completion.chunk" for c in chunks)


def test_stop_and_seed(client, reference):
    full, _ = reference.greedy_text(PROMPTS[3], 30)
    stop = full[8:11]
    result = client.completions.create(model="tiny", prompt=PROMPTS[3], max_tokens=30,
                                       temperature=0, stop=[stop])
    assert result.choices[0].text == full[: full.index(stop)]
    assert result.choices[0].finish_reason == "stop"
    sampled = [client.completions.create(model="tiny", prompt="The", max_tokens=12,
                                         temperature=1.0, top_p=0.95, seed=seed).choices[0].text
               for seed in (7, 7, 8)]
    assert sampled[0] == sampled[1] != sampled[2]


def test_errors_have_openais_shape_and_status(client, server):
    with pytest.raises(openai.BadRequestError) as failure:
        client.completions.create(model="tiny", prompt="x", suffix="!")
    assert "'suffix' is not supported" in str(failure.value)
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(model="nope", messages=MESSAGES)
    assert missing.value.body["code"] == "model_not_found"
    with pytest.raises(openai.BadRequestError) as failure:
        client.completions.create(model="tiny", prompt="x", temperature=-2)
    assert "temperature must be non-negative" in str(failure.value)
    # Refused before the first token: a streamed request gets the same 400, not an event.
    with pytest.raises(openai.BadRequestError) as failure:
        client.chat.completions.create(model="tiny", messages=MESSAGES, top_p=0, stream=True)
    assert "top_p must be in (0, 1]" in str(failure.value)
    with pytest.raises(openai.BadRequestError) as failure:
        client.completions.create(model="tiny", prompt="word " * 600)
    assert "This model's maximum context length is 512 tokens." in str(failure.value)
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.openai_port}/v1/completions", data=b"{not json",
        method="POST")
    with pytest.raises(urllib.error.HTTPError) as raw:
        urllib.request.urlopen(request)
    assert raw.value.code == 400
    body = json.loads(raw.value.read())
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["type"] == "invalid_request_error"
    # Nested past the parser's depth: a client's fault too (it answered 500).
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.openai_port}/v1/completions",
        data=b"[" * 100_000 + b"]" * 100_000, method="POST")
    with pytest.raises(urllib.error.HTTPError) as raw:
        urllib.request.urlopen(request)
    assert raw.value.code == 400
    assert json.loads(raw.value.read())["error"]["message"] == (
        "the request body is not valid JSON: it is nested too deeply")
    # The server keeps serving.
    assert client.completions.create(model="tiny", prompt="x", max_tokens=2).choices
