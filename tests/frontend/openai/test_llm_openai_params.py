"""The OpenAI API's sampling and output parameters as vLLM serves them, on the llm backend:
max_model_len checks, stop_token_ids, min_p, logprobs (held to a transformers forward pass of
the same model), penalties and logit_bias (held to vLLM's formulas applied to transformers'
logits), n and echo. One server for the module; every request is small."""

from __future__ import annotations

import json
import math
import re
import urllib.error
import urllib.request
from pathlib import Path

import openai
import pytest

from support.llm_fixtures import PROMPTS, Reference, generate, llm_weights  # noqa: F401
from support.llm_models import llm_repository
from support.server_process import openai_server

MAX_MODEL_LEN = 96
MESSAGES = [{"role": "user", "content": "Héllo, who are you?"}]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, llm_weights: dict[str, Path]):
    repo = llm_repository(tmp_path_factory.mktemp("openai_params_repo"),
                          {"tiny": {"family": "llama",
                                    "engine": {"max_model_len": MAX_MODEL_LEN}}}, llm_weights)
    process = openai_server(repo)
    # Importing torch and transformers on a loaded two-core machine can take a minute or two.
    process.start(timeout=300)
    try:
        yield process
    finally:
        process.stop()


def _token_text(reference: Reference):
    """A token's text as the logprobs name it (special tokens skipped, as in the text)."""
    return lambda ids: reference.tokenizer.decode(ids, skip_special_tokens=True)


def _raw_logprobs(reference: Reference, ids: list[int]):
    """log-softmax of the model's logits at every position of `ids` [len, vocab]."""
    torch = reference.torch
    with torch.inference_mode():
        logits = reference.model(torch.tensor([ids])).logits[0].float()
    return torch.log_softmax(logits, dim=-1)


def _greedy_with(reference: Reference, prompt: str, steps: int, adjust) -> list[int]:
    """Greedy decoding where `adjust(logits, prompt_ids, output_ids)` changes each step's
    logits first: the reference for penalties and logit_bias."""
    torch = reference.torch
    prompt_ids = reference.tokenizer(prompt).input_ids
    output: list[int] = []
    with torch.inference_mode():
        for _ in range(steps):
            logits = reference.model(torch.tensor([prompt_ids + output])).logits[0, -1].float()
            output.append(int(torch.argmax(adjust(logits.clone(), prompt_ids, output))))
            if output[-1] == reference.eos:
                break
    return output


# -- 1. lengths, stop_token_ids, min_p, seed ------------------------------------------------------


def test_max_tokens_past_max_model_len_is_a_400_with_vllms_message(client, reference):
    prompt_tokens = len(reference.tokenizer(PROMPTS[2]).input_ids)
    too_many = MAX_MODEL_LEN - prompt_tokens + 1
    with pytest.raises(openai.BadRequestError) as failure:
        client.completions.create(model="tiny", prompt=PROMPTS[2], max_tokens=too_many)
    assert failure.value.body["message"] == (
        f"This model's maximum context length is {MAX_MODEL_LEN} tokens. However, you "
        f"requested {MAX_MODEL_LEN + 1} tokens ({prompt_tokens} in the messages, {too_many} in "
        "the completion). Please reduce the length of the messages or completion.")
    with pytest.raises(openai.BadRequestError, match="maximum context length is 96 tokens"):
        client.chat.completions.create(model="tiny", messages=MESSAGES,
                                       max_completion_tokens=MAX_MODEL_LEN, stream=True)
    # Exactly the room left is fine; chat without a limit runs to max_model_len.
    result = client.completions.create(model="tiny", prompt=PROMPTS[2],
                                       max_tokens=too_many - 1, temperature=0)
    assert result.usage.total_tokens <= MAX_MODEL_LEN
    result = client.chat.completions.create(model="tiny", messages=MESSAGES, temperature=0)
    assert result.usage.total_tokens <= MAX_MODEL_LEN


def test_max_completion_tokens_bounds_a_chat_answer(client):
    result = client.chat.completions.create(model="tiny", messages=MESSAGES, temperature=0,
                                            max_completion_tokens=3,
                                            extra_body={"ignore_eos": True})
    assert result.usage.completion_tokens == 3
    assert result.choices[0].finish_reason == "length"


def test_stop_token_ids_end_the_answer(client, reference):
    tokens = reference.greedy_tokens(PROMPTS[0], 16)
    # The first token that did not come before: generation stops right there.
    at = next(i for i in range(2, len(tokens)) if tokens[i] not in tokens[:i])
    result = client.completions.create(model="tiny", prompt=PROMPTS[0], max_tokens=16,
                                       temperature=0, extra_body={"stop_token_ids": [tokens[at]]})
    choice = result.choices[0]
    assert choice.finish_reason == "stop"
    assert choice.text == reference.text(PROMPTS[0], tokens[:at])
    assert result.usage.completion_tokens == at + 1


def test_min_p_one_keeps_only_the_likeliest_token(client, reference):
    expected, _ = reference.greedy_text(PROMPTS[4], 12)
    for seed in (1, 2, 3):
        result = client.completions.create(model="tiny", prompt=PROMPTS[4], max_tokens=12,
                                           temperature=1.5, seed=seed, extra_body={"min_p": 1.0})
        assert result.choices[0].text == expected
    sampled = {client.completions.create(model="tiny", prompt=PROMPTS[4], max_tokens=12,
                                         temperature=1.5, seed=seed,
                                         extra_body={"min_p": 0.01}).choices[0].text
               for seed in (1, 2, 3)}
    assert len(sampled) > 1


# -- 2. logprobs -----------------------------------------------------------------------------------


def _ids(reference: Reference, prompt: str, count: int) -> tuple[list[int], list[int]]:
    return reference.tokenizer(prompt).input_ids, reference.greedy_tokens(prompt, count)


def test_completion_logprobs_equal_the_models_log_softmax(client, reference):
    prompt_ids, output = _ids(reference, PROMPTS[3], 10)
    result = client.completions.create(model="tiny", prompt=PROMPTS[3], max_tokens=10,
                                       temperature=0, logprobs=3)
    logprobs = result.choices[0].logprobs
    expected = _raw_logprobs(reference, prompt_ids + output)[len(prompt_ids) - 1:-1]
    decode = _token_text(reference)
    assert logprobs.tokens == [decode([t]) for t in output]
    for position, token in enumerate(output):
        row = expected[position]
        assert math.isclose(logprobs.token_logprobs[position], float(row[token]), abs_tol=1e-4)
        values, ids = row.topk(3)
        top = logprobs.top_logprobs[position]
        texts = [decode([t]) for t in {token, *ids.tolist()}]
        assert set(top) == set(texts)
        for value, index in zip(values.tolist(), ids.tolist(), strict=True):
            if texts.count(decode([index])) == 1:  # keyed by text: two "\ufffd" share a key
                assert math.isclose(top[decode([index])], value, abs_tol=1e-4)
    assert logprobs.text_offset[0] == 0
    assert logprobs.text_offset[1:] == [
        sum(len(t) for t in logprobs.tokens[:i]) for i in range(1, len(output))]


def test_chat_logprobs_and_top_logprobs_plain_and_streamed(client, reference):
    prompt = reference.tokenizer.apply_chat_template(MESSAGES, tokenize=False,
                                                     add_generation_prompt=True)
    prompt_ids, output = _ids(reference, prompt, 8)
    result = client.chat.completions.create(model="tiny", messages=MESSAGES, temperature=0,
                                            max_completion_tokens=8, logprobs=True,
                                            top_logprobs=2)
    content = result.choices[0].logprobs.content
    assert len(content) == len(output)
    expected = _raw_logprobs(reference, prompt_ids + output)[len(prompt_ids) - 1:-1]
    decode = _token_text(reference)
    for position, item in enumerate(content):
        values, top_ids = expected[position].topk(2)
        assert item.token == decode([output[position]])
        assert math.isclose(item.logprob, float(values[0]), abs_tol=1e-4)  # greedy: the top
        assert [t.token for t in item.top_logprobs] == [decode([int(i)]) for i in top_ids]
        for top, value in zip(item.top_logprobs, values.tolist(), strict=True):
            assert math.isclose(top.logprob, value, abs_tol=1e-4)
        assert item.bytes == list(item.token.encode("utf-8", errors="replace"))
    chunks = list(client.chat.completions.create(
        model="tiny", messages=MESSAGES, temperature=0, max_completion_tokens=8, logprobs=True,
        top_logprobs=2, stream=True))
    streamed = [item for c in chunks if c.choices and c.choices[0].logprobs
                for item in c.choices[0].logprobs.content]
    assert [(i.token, i.logprob) for i in streamed] == [(i.token, i.logprob) for i in content]
    with pytest.raises(openai.BadRequestError, match="`logprobs` must be set to true"):
        client.chat.completions.create(model="tiny", messages=MESSAGES, top_logprobs=2)


# -- 3. penalties and logit_bias -------------------------------------------------------------------


@pytest.mark.parametrize("parameters", [
    {"presence_penalty": 1.5},
    {"frequency_penalty": 1.0},
    {"repetition_penalty": 1.8},
    {"presence_penalty": -0.5, "frequency_penalty": 0.7, "repetition_penalty": 1.3},
])
def test_penalties_follow_vllms_semantics(client, reference, parameters):
    torch = reference.torch

    def adjust(logits, prompt_ids, output):
        repetition = parameters.get("repetition_penalty", 1.0)
        seen = torch.zeros_like(logits, dtype=torch.bool)
        seen[prompt_ids + output] = True
        scaled = torch.where(logits > 0, logits / repetition, logits * repetition)
        logits = torch.where(seen, scaled, logits)
        counts = torch.bincount(torch.tensor(output, dtype=torch.long),
                                minlength=logits.shape[0]).float()
        logits -= parameters.get("frequency_penalty", 0.0) * counts
        logits -= parameters.get("presence_penalty", 0.0) * (counts > 0)
        return logits

    expected = _greedy_with(reference, PROMPTS[2], 16, adjust)
    plain = reference.greedy_tokens(PROMPTS[2], 16)
    assert expected != plain  # the penalty changes this answer: what is being tested
    result = client.completions.create(
        model="tiny", prompt=PROMPTS[2], max_tokens=16, temperature=0,
        presence_penalty=parameters.get("presence_penalty"),
        frequency_penalty=parameters.get("frequency_penalty"),
        extra_body={k: v for k, v in parameters.items() if k == "repetition_penalty"})
    assert result.choices[0].text == reference.text(PROMPTS[2], expected)


def test_logit_bias_moves_the_choice(client, reference):
    favourite = reference.tokenizer(" fox", add_special_tokens=False).input_ids[0]
    result = client.completions.create(model="tiny", prompt=PROMPTS[1], max_tokens=4,
                                       temperature=0, logit_bias={str(favourite): 100})
    assert result.choices[0].text == reference.tokenizer.decode([favourite] * 4)
    banned = reference.greedy_tokens(PROMPTS[1], 1)[0]
    result = client.completions.create(model="tiny", prompt=PROMPTS[1], max_tokens=1,
                                       temperature=0, logprobs=0,
                                       logit_bias={str(banned): -100})
    assert result.choices[0].logprobs.tokens != [reference.tokenizer.decode([banned])]
    with pytest.raises(openai.BadRequestError, match="out-of-vocab token ids"):
        client.completions.create(model="tiny", prompt="x", logit_bias={"99999": 1})
    with pytest.raises(openai.BadRequestError, match="presence_penalty must be in"):
        client.completions.create(model="tiny", prompt="x", presence_penalty=3)



# -- structured outputs ------------------------------------------------------------------------

ANSWER_SCHEMA = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}},
                 "required": ["answer"], "additionalProperties": False}


def _grammar_greedy(reference: Reference, prompt: str, steps: int, schema: dict | None,
                    compile_grammar=None):
    """Greedy decoding held to a JSON grammar (or what `compile_grammar(compiler)` compiles) by
    xgrammar used directly: the reference for the engine's structured outputs."""
    import xgrammar

    info = xgrammar.TokenizerInfo.from_huggingface(
        reference.tokenizer, vocab_size=reference.model.config.vocab_size)
    compiler = xgrammar.GrammarCompiler(info)
    if compile_grammar is not None:
        compiled = compile_grammar(compiler)
    elif schema is None:
        compiled = compiler.compile_builtin_json_grammar()
    else:
        compiled = compiler.compile_json_schema(json.dumps(schema))
    matcher = xgrammar.GrammarMatcher(compiled)
    bitmask = xgrammar.allocate_token_bitmask(1, info.vocab_size)

    def adjust(logits, prompt_ids, output):
        if output:
            assert matcher.accept_token(output[-1])
        matcher.fill_next_token_bitmask(bitmask)
        xgrammar.apply_token_bitmask_inplace(logits[None], bitmask)
        return logits

    return _greedy_with(reference, prompt, steps, adjust)


@pytest.mark.parametrize("response_format, schema", [
    ({"type": "json_object"}, None),
    ({"type": "json_schema", "json_schema": {"name": "answer", "schema": ANSWER_SCHEMA}},
     ANSWER_SCHEMA),
], ids=["json_object", "json_schema"])
def test_response_format_holds_the_answer_to_json(client, reference, response_format, schema):
    expected = _grammar_greedy(reference, PROMPTS[2], 24, schema)
    assert expected != reference.greedy_tokens(PROMPTS[2], 24)  # the grammar steers it
    result = client.completions.create(model="tiny", prompt=PROMPTS[2], max_tokens=24,
                                       temperature=0,
                                       extra_body={"response_format": response_format})
    assert result.choices[0].text == reference.text(PROMPTS[2], expected)
    if schema is not None and result.choices[0].finish_reason == "stop":
        assert json.loads(result.choices[0].text)["answer"] in ("yes", "no")


def test_structured_outputs_through_sampling_parameters(server):
    status, body = generate(server, "tiny", {
        "text_input": PROMPTS[0], "exclude_input_in_output": True,
        "sampling_parameters": json.dumps({"max_tokens": 24, "temperature": 0,
                                           "guided_decoding": {"json": ANSWER_SCHEMA}})})
    assert status == 200, body
    assert body["text_output"].lstrip().startswith("{")
    for guided, message in (
        ({"xml": "<a/>"}, "structured_outputs xml is not supported; the llm backend "
                          "supports json, json_object, regex, choice, grammar"),
        ({"json": {"type": "no such type"}}, "the JSON schema cannot be used"),
        ({"regex": "(a"}, "the regular expression cannot be used: Regex parsing error at "
                          "position 3: The parenthesis is not closed."),
        ({"choice": []}, "structured_outputs choice must be a non-empty list of strings"),
        ({"grammar": "root ::= "}, "the grammar cannot be used: EBNF parser error"),
        ({"regex": "a", "choice": ["a"]}, "not choice and regex"),
    ):
        status, body = generate(server, "tiny", {
            "text_input": "x", "sampling_parameters": json.dumps(
                {"structured_outputs": guided})})
        assert status == 400 and message in body["error"], body


@pytest.mark.parametrize("guided, compile_grammar, check", [
    ({"regex": "[0-9]{2}-(yes|no)"}, lambda c: c.compile_regex("[0-9]{2}-(yes|no)"),
     lambda text: re.fullmatch("[0-9]{2}-(yes|no)", text)),
    ({"choice": ["red", 'say "hi"', "Grüße"]},
     lambda c: c.compile_grammar('root ::= "red" | "say \\"hi\\"" | "Grüße"'),
     lambda text: text in ("red", 'say "hi"', "Grüße")),
], ids=["regex", "choice"])
def test_structured_outputs_regex_and_choice_as_vllm_takes_them(client, reference, guided,
                                                                compile_grammar, check):
    expected = _grammar_greedy(reference, PROMPTS[2], 24, None, compile_grammar)
    result = client.completions.create(model="tiny", prompt=PROMPTS[2], max_tokens=24,
                                       temperature=0,
                                       extra_body={"structured_outputs": guided})
    choice = result.choices[0]
    assert choice.text == reference.text(PROMPTS[2], expected)
    assert choice.finish_reason == "stop" and check(choice.text), choice
    chat = client.chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": "pick"}], max_tokens=24,
        temperature=0, extra_body={"structured_outputs": guided})
    assert check(chat.choices[0].message.content), chat


def test_response_format_and_structured_outputs_together_are_a_400(client):
    with pytest.raises(openai.BadRequestError, match="response_format or structured_outputs"):
        client.completions.create(model="tiny", prompt="x", extra_body={
            "response_format": {"type": "json_object"},
            "structured_outputs": {"regex": "a"}})

# -- 4. n and echo ---------------------------------------------------------------------------------


def test_n_samples_are_indexed_and_seeded_like_single_requests(client):
    sampling = dict(model="tiny", prompt=PROMPTS[0], max_tokens=10, temperature=1.0)
    result = client.completions.create(n=3, seed=40, **sampling)
    assert [c.index for c in result.choices] == [0, 1, 2]
    singles = [client.completions.create(seed=seed, **sampling).choices[0].text
               for seed in (40, 41, 42)]
    assert [c.text for c in result.choices] == singles
    assert result.usage.completion_tokens == sum(
        client.completions.create(seed=seed, **sampling).usage.completion_tokens
        for seed in (40, 41, 42))
    chunks = list(client.chat.completions.create(
        model="tiny", messages=MESSAGES, max_completion_tokens=6, temperature=1.0, seed=5, n=2,
        stream=True))
    texts = {0: "", 1: ""}
    finished = set()
    for chunk in chunks:
        for choice in chunk.choices:
            texts[choice.index] += choice.delta.content or ""
            if choice.finish_reason:
                finished.add(choice.index)
    assert finished == {0, 1}
    plain = client.chat.completions.create(model="tiny", messages=MESSAGES, temperature=1.0,
                                           max_completion_tokens=6, seed=5, n=2)
    assert [texts[0], texts[1]] == [c.message.content for c in plain.choices]


def test_echo_prepends_the_prompt_with_its_logprobs(client, reference):
    prompt_ids, output = _ids(reference, PROMPTS[3], 5)
    plain = client.completions.create(model="tiny", prompt=PROMPTS[3], max_tokens=5,
                                      temperature=0)
    echoed = client.completions.create(model="tiny", prompt=PROMPTS[3], max_tokens=5,
                                       temperature=0, echo=True, logprobs=1)
    choice = echoed.choices[0]
    assert choice.text == PROMPTS[3] + plain.choices[0].text
    decode = _token_text(reference)
    assert choice.logprobs.tokens == [decode([t]) for t in prompt_ids + output]
    assert choice.logprobs.token_logprobs[0] is None and choice.logprobs.top_logprobs[0] is None
    expected = _raw_logprobs(reference, prompt_ids + output)
    for position, token in enumerate(prompt_ids + output):
        if position:
            assert math.isclose(choice.logprobs.token_logprobs[position],
                                float(expected[position - 1, token]), abs_tol=1e-4)
    chunks = list(client.completions.create(model="tiny", prompt=PROMPTS[3], max_tokens=5,
                                            temperature=0, echo=True, stream=True))
    assert chunks[0].choices[0].text.startswith(PROMPTS[3])
    assert "".join(c.choices[0].text for c in chunks) == choice.text


# -- the same parameters over Triton's generate endpoint ----------------------------------------


def test_logprobs_and_penalties_through_sampling_parameters(server):
    status, body = generate(server, "tiny", {
        "text_input": PROMPTS[0], "exclude_input_in_output": True,
        "sampling_parameters": json.dumps({"max_tokens": 4, "temperature": 0, "logprobs": 2,
                                           "prompt_logprobs": 1,
                                           "repetition_penalty": 1.2})})
    assert status == 200
    entries = json.loads(body["logprobs"])
    assert len(entries) == 4 and all(len(e) in (2, 3) for e in entries)
    first = next(iter(entries[0].values()))
    assert set(first) == {"logprob", "rank", "decoded_token"}
    prompt = json.loads(body["prompt_logprobs"])
    assert next(iter(prompt[0].values()))["logprob"] is None
    status, body = generate(server, "tiny", {"text_input": "x", "min_p": 2})
    assert status == 400 and "min_p must be in [0, 1]" in body["error"]


def test_unsupported_fields_are_still_refused(server):
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.openai_port}/v1/completions", method="POST",
        data=json.dumps({"model": "tiny", "prompt": "x", "best_of": 3}).encode())
    with pytest.raises(urllib.error.HTTPError) as raw:
        urllib.request.urlopen(request)
    assert raw.value.code == 400
    assert json.loads(raw.value.read())["error"]["param"] == "best_of"
