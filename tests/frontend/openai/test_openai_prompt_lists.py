"""Several prompts in one /v1/completions request, and prompts given as token ids, as OpenAI's API
and vLLM's OpenAI server take them: a list of strings, a list of token ids, a list of token-id
lists. What EleutherAI's lm-evaluation-harness (`local-completions`) sends: batches of prompts,
and for loglikelihood tasks token-id prompts with `echo`, `max_tokens` 0 or 1 and `logprobs`,
reading the prompt tokens' logprobs. Held to transformers' greedy decoding and forward pass of
the same model, and to the llm backend's own `prompt_logprobs` over Triton's generate endpoint.
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from support.llm_fixtures import PROMPTS, Reference, generate, llm_weights  # noqa: F401
from support.llm_models import llm_repository
from support.server_process import openai_server

MAX_MODEL_LEN = 96
CHOSEN = [PROMPTS[0], PROMPTS[2], PROMPTS[3]]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, llm_weights: dict[str, Path]):
    repo = llm_repository(tmp_path_factory.mktemp("openai_prompts_repo"),
                          {"tiny": {"family": "llama",
                                    "engine": {"max_model_len": MAX_MODEL_LEN}}}, llm_weights)
    process = openai_server(repo)
    process.start(timeout=300)  # torch and transformers on a loaded two-core machine
    try:
        yield process
    finally:
        process.stop()


def _post(server, document: dict[str, Any]) -> tuple[int, Any]:
    """POST a completion body: the status and the JSON answer (the events, when streamed)."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.openai_port}/v1/completions", method="POST",
        data=json.dumps(document).encode(), headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            body = answer.read().decode()
            status = answer.status
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
    if document.get("stream"):
        return status, [event[len("data: "):] for event in body.split("\n\n")
                        if event.startswith("data: ")]
    return status, json.loads(body)


def _ids(reference: Reference, prompt: str) -> list[int]:
    return reference.tokenizer(prompt).input_ids


def _logprobs(reference: Reference, ids: list[int]) -> list[float]:
    """Each token's logprob after the ones before it (the first has none): transformers'."""
    torch = reference.torch
    with torch.inference_mode():
        logits = reference.model(torch.tensor([ids])).logits[0].float()
    table = torch.log_softmax(logits, dim=-1)
    return [float(table[position - 1, token]) for position, token in enumerate(ids)
            if position]


def test_a_list_of_prompts_answers_each_prompts_choices_in_order(client, reference):
    result = client.completions.create(model="tiny", prompt=CHOSEN, max_tokens=8,
                                       temperature=0, n=2)
    assert [c.index for c in result.choices] == list(range(6))
    counts = []
    for i, prompt in enumerate(CHOSEN):
        expected, count = reference.greedy_text(prompt, 8)
        counts.append(count)
        for j in range(2):  # vLLM's numbering: prompt i's choice j at i * n + j
            assert result.choices[i * 2 + j].text == expected
    # Each prompt's tokens once (not once per choice), as vLLM counts them.
    assert result.usage.prompt_tokens == sum(len(_ids(reference, p)) for p in CHOSEN)
    assert result.usage.completion_tokens == 2 * sum(counts)


def test_a_streamed_list_of_prompts_names_each_chunks_choice(client, reference):
    texts = ["", "", ""]
    finished = set()
    chunks = list(client.completions.create(model="tiny", prompt=CHOSEN, max_tokens=8,
                                            temperature=0, stream=True,
                                            stream_options={"include_usage": True}))
    for chunk in chunks[:-1]:
        (choice,) = chunk.choices
        texts[choice.index] += choice.text
        if choice.finish_reason:
            finished.add(choice.index)
    assert finished == {0, 1, 2}
    answers = [reference.greedy_text(prompt, 8) for prompt in CHOSEN]
    assert texts == [text for text, _ in answers]
    usage = chunks[-1].usage
    assert chunks[-1].choices == []
    assert usage.prompt_tokens == sum(len(_ids(reference, p)) for p in CHOSEN)
    assert usage.completion_tokens == sum(count for _, count in answers)


def test_token_id_prompts_answer_as_their_text_does(client, reference):
    one = _ids(reference, PROMPTS[2])
    result = client.completions.create(model="tiny", prompt=one, max_tokens=10, temperature=0)
    expected, count = reference.greedy_text(PROMPTS[2], 10)
    assert [c.text for c in result.choices] == [expected]
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (len(one), count)
    several = [_ids(reference, prompt) for prompt in CHOSEN]
    result = client.completions.create(model="tiny", prompt=several, max_tokens=6,
                                       temperature=0)
    assert [c.text for c in result.choices] == [reference.greedy_text(p, 6)[0] for p in CHOSEN]
    assert result.usage.prompt_tokens == sum(map(len, several))
    # Echoed: the ids' text, decoded as vLLM decodes a token-id prompt (special tokens kept).
    ids = [reference.tokenizer.bos_token_id, *one]
    streamed = "".join(c.choices[0].text for c in client.completions.create(
        model="tiny", prompt=ids, max_tokens=4, temperature=0, echo=True, stream=True))
    assert streamed.startswith("<|begin|>" + PROMPTS[2])
    plain = client.completions.create(model="tiny", prompt=ids, max_tokens=4, temperature=0,
                                      echo=True)
    assert plain.choices[0].text == streamed


def test_echo_with_logprobs_reads_each_prompts_token_logprobs(server, reference):
    """lm-evaluation-harness's loglikelihood request: token-id prompts, echo, one token."""
    several = [_ids(reference, prompt) for prompt in CHOSEN]
    status, answer = _post(server, {"model": "tiny", "prompt": several, "echo": True,
                                    "max_tokens": 1, "logprobs": 1, "temperature": 0})
    assert status == 200
    for ids, choice in zip(several, answer["choices"], strict=True):
        logprobs = choice["logprobs"]
        assert len(logprobs["token_logprobs"]) == len(ids) + 1  # the prompt, then the token
        assert logprobs["token_logprobs"][0] is None and logprobs["top_logprobs"][0] is None
        for got, want in zip(logprobs["token_logprobs"][1:len(ids)], _logprobs(reference, ids),
                             strict=True):
            assert math.isclose(got, want, abs_tol=1e-4)
        assert choice["text"].startswith(reference.tokenizer.decode(ids))
    # max_tokens 0 with echo: the prompt alone, its logprobs alone (vLLM generates one token,
    # counted in usage, and leaves it out of the answer).
    status, alone = _post(server, {"model": "tiny", "prompt": several, "echo": True,
                                   "max_tokens": 0, "logprobs": 1, "temperature": 0})
    assert status == 200
    for ids, full, choice in zip(several, answer["choices"], alone["choices"], strict=True):
        assert choice["text"] == reference.tokenizer.decode(ids)
        assert choice["logprobs"]["token_logprobs"] == full["logprobs"]["token_logprobs"][:-1]
        assert choice["logprobs"]["tokens"] == full["logprobs"]["tokens"][:-1]
        assert choice["finish_reason"] in ("length", "stop")
    assert alone["usage"] == {"prompt_tokens": sum(map(len, several)), "completion_tokens": 3,
                              "total_tokens": sum(map(len, several)) + 3}
    status, events = _post(server, {"model": "tiny", "prompt": several[0], "echo": True,
                                    "max_tokens": 0, "logprobs": 1, "stream": True})
    (chunk,) = [json.loads(event) for event in events[:-1]]
    assert chunk["choices"][0]["text"] == reference.tokenizer.decode(several[0])
    assert chunk["choices"][0]["logprobs"]["token_logprobs"] == \
        alone["choices"][0]["logprobs"]["token_logprobs"]


def test_echoed_logprobs_are_the_backends_prompt_logprobs(server, reference):
    """The OpenAI answer's prompt logprobs are what Triton's generate endpoint answers for the
    same prompt in the llm backend's `prompt_logprobs` output, as text or as token ids."""
    ids = _ids(reference, PROMPTS[3])
    _, answer = _post(server, {"model": "tiny", "prompt": [ids], "echo": True, "max_tokens": 1,
                               "logprobs": 2, "temperature": 0})
    sampling = json.dumps({"max_tokens": 1, "temperature": 0, "prompt_logprobs": 2})
    status, plain = generate(server, "tiny", {"text_input": PROMPTS[3],
                                              "sampling_parameters": sampling})
    assert status == 200
    entries = json.loads(plain["prompt_logprobs"])
    assert [entry[str(token)]["logprob"] for entry, token in zip(entries, ids, strict=True)] \
        == answer["choices"][0]["logprobs"]["token_logprobs"][:-1]
    # The backend's own input: the same ids, the prompt's text in `prompt_text`.
    status, by_ids = generate(server, "tiny", {"text_input": "", "prompt_token_ids": ids,
                                               "sampling_parameters": sampling})
    assert status == 200
    assert json.loads(by_ids["prompt_logprobs"]) == entries
    assert by_ids["prompt_text"] == reference.tokenizer.decode(ids) == PROMPTS[3]
    assert by_ids["text_output"] == PROMPTS[3] + plain["text_output"][len(PROMPTS[3]):]
    status, body = generate(server, "tiny", {"text_input": "x", "prompt_token_ids": ids})
    assert status == 400 and "text_input or in prompt_token_ids, not both" in body["error"]


@pytest.mark.parametrize(("prompt", "message"), [
    ([], "You must pass at least one prompt"),
    ("", "Either prompt or prompt_embeds must be provided and non-empty."),
    ([[]], "The decoder prompt cannot be empty"),
    ([5, 1000000], "Token id 1000000 is out of vocabulary"),
    ([[7, 400]], "Token id 400 is out of vocabulary"),
    ([2**64], f"Token id {2**64} is out of vocabulary"),
    ([[5] * MAX_MODEL_LEN], f"This model's maximum context length is {MAX_MODEL_LEN} tokens. "
                            f"However, your request has {MAX_MODEL_LEN} input tokens."),
    ([5, -1], "token ids in 'prompt' must be non-negative, got -1"),
    (["a", 5], "'prompt' must be a string, a list of strings, a list of token ids or a list of "
               "token-id lists"),
    ([[5], "a"], "'prompt' must be a string"),
    ([True], "'prompt' must be a string"),
    ([[1.5]], "'prompt' must be a string"),
    (["a"] * 1025, "prompt list length 1025 exceeds the maximum allowed count of 1024."),
])
def test_bad_prompts_are_refused_in_vllms_words(server, prompt, message):
    for stream in (False, True):
        status, answer = _post(server, {"model": "tiny", "prompt": prompt, "max_tokens": 2,
                                        "stream": stream})
        assert status == 400, answer
        assert answer["error"]["message"].startswith(message)
        assert answer["error"]["type"] == "invalid_request_error"
    status, answer = _post(server, {"model": "tiny", "prompt": [[5, 6], [7]], "max_tokens": 1})
    assert status == 200 and len(answer["choices"]) == 2  # and the server serves on


@pytest.mark.parametrize(("prompt", "message"), [
    ([[5, 6], []], "The decoder prompt cannot be empty"),
    ([[5, 6], [7, 400]], "Token id 400 is out of vocabulary"),
    (["fine", "word " * 200], "This model's maximum context length is 96 tokens."),
])
def test_one_bad_prompt_fails_the_whole_request(server, prompt, message):
    """As in vLLM, whose renderer checks every prompt first. (Streamed, the model's refusal of
    one may come after another's first chunk: the stream then ends with the error.)"""
    status, answer = _post(server, {"model": "tiny", "prompt": prompt, "max_tokens": 2})
    assert status == 400, answer
    assert answer["error"]["message"].startswith(message)


def test_prompts_times_n_is_bounded(server):
    status, answer = _post(server, {"model": "tiny", "prompt": ["a"] * 513, "n": 2})
    assert status == 400
    assert answer["error"]["message"] == (
        "513 prompts x n = 2 make 1026 choices, more than the 1024 one request may ask: send "
        "fewer prompts per request")
    assert answer["error"]["param"] == "prompt"
