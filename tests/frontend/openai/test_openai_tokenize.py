"""vLLM's /tokenize, /detokenize, /version and model card fields on the OpenAI port, with the
llm backend's tiny Llama: its tokens are those of the model's own tokenizer and chat template
(transformers' tokenizer of the same folder is the reference), and every bad request is an
OpenAI error body with its status while the server keeps serving."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests

from support.llm_fixtures import PROMPTS, llm_weights  # noqa: F401
from support.llm_models import llm_repository
from support.server_process import ServerProcess, openai_server

MESSAGES = [{"role": "system", "content": "You are tiny."},
            {"role": "user", "content": "Héllo, who are you?"}]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, llm_weights: dict[str, Path]):
    repo = llm_repository(tmp_path_factory.mktemp("tokenize_repo"),
                          {"tiny": {"family": "llama", "engine": {"max_model_len": 256}}},
                          llm_weights)
    with openai_server(repo) as process:
        yield process


def _post(server: ServerProcess, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    answer = requests.post(f"http://127.0.0.1:{server.openai_port}{path}", json=body,
                           timeout=60)
    return answer.status_code, answer.json()


def test_a_prompt_is_tokenized_by_the_models_tokenizer(server, reference):
    status, answer = _post(server, "/tokenize", {"model": "tiny", "prompt": PROMPTS[1],
                                                 "return_token_strs": True})
    expected = reference.tokenizer(PROMPTS[1]).input_ids
    assert status == 200
    assert answer == {"count": len(expected), "max_model_len": 256, "tokens": expected,
                      "token_strs": reference.tokenizer.convert_ids_to_tokens(expected)}
    status, answer = _post(server, "/tokenize", {"model": "tiny", "prompt": PROMPTS[1],
                                                 "add_special_tokens": False})
    assert answer["tokens"] == reference.tokenizer(PROMPTS[1],
                                                   add_special_tokens=False).input_ids
    assert answer["token_strs"] is None


def test_tokens_count_as_a_completion_counts_its_prompt(server, client):
    _, answer = _post(server, "/tokenize", {"model": "tiny", "prompt": PROMPTS[0]})
    completion = client.completions.create(model="tiny", prompt=PROMPTS[0], max_tokens=1)
    assert completion.usage.prompt_tokens == answer["count"]


def test_chat_messages_are_rendered_with_the_models_template(server, client, reference):
    _, answer = _post(server, "/tokenize", {"model": "tiny", "messages": MESSAGES})
    rendered = reference.tokenizer.apply_chat_template(MESSAGES, tokenize=False,
                                                       add_generation_prompt=True)
    assert answer["tokens"] == reference.tokenizer(rendered, add_special_tokens=False).input_ids
    chat = client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=1)
    assert chat.usage.prompt_tokens == answer["count"]

    _, bare = _post(server, "/tokenize", {"model": "tiny", "messages": MESSAGES,
                                          "add_generation_prompt": False})
    rendered = reference.tokenizer.apply_chat_template(MESSAGES, tokenize=False)
    assert bare["tokens"] == reference.tokenizer(rendered, add_special_tokens=False).input_ids
    assert bare["count"] < answer["count"]


def test_chat_completions_take_the_same_prompt_options(server, client):
    _, bare = _post(server, "/tokenize", {"model": "tiny", "messages": MESSAGES,
                                          "add_generation_prompt": False})
    chat = client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=1,
                                          extra_body={"add_generation_prompt": False})
    assert chat.usage.prompt_tokens == bare["count"]


def test_detokenize_gives_back_the_text(server, reference):
    _, answer = _post(server, "/tokenize", {"model": "tiny", "prompt": PROMPTS[2],
                                            "add_special_tokens": False})
    status, text = _post(server, "/detokenize", {"model": "tiny", "tokens": answer["tokens"]})
    assert (status, text) == (200, {"prompt": PROMPTS[2]})
    assert _post(server, "/detokenize", {"model": "tiny", "tokens": []}) == (200, {"prompt": ""})


def test_the_model_may_be_left_out_when_one_is_served(server):
    status, answer = _post(server, "/tokenize", {"prompt": "Hi", "add_special_tokens": False})
    assert status == 200 and answer["count"] == len(answer["tokens"]) > 0


@pytest.mark.parametrize(("path", "body", "status", "message"), [
    ("/tokenize", {"model": "nope", "prompt": "x"}, 404, "The model `nope` does not exist."),
    ("/tokenize", {"model": "tiny"}, 400, "'prompt' is a required property"),
    ("/tokenize", {"model": "tiny", "prompt": 5}, 400, "'prompt' must be str"),
    ("/tokenize", {"model": "tiny", "messages": []}, 400, "at least one message"),
    ("/tokenize", {"model": "tiny", "messages": MESSAGES, "continue_final_message": True,
                   "add_generation_prompt": True}, 400,
     "Cannot set both `continue_final_message` and `add_generation_prompt` to True."),
    ("/tokenize", {"model": "tiny", "messages": MESSAGES, "chat_template": "{{ 1 }}"}, 400,
     "a chat template sent with the request is refused"),
    ("/tokenize", {"model": "tiny", "messages": MESSAGES,
                   "chat_template_kwargs": {"tokenize": True}}, 400,
     "chat_template_kwargs: tokenize is not a template variable"),
    ("/detokenize", {"model": "nope", "tokens": [1]}, 404, "The model `nope` does not exist."),
    ("/detokenize", {"model": "tiny"}, 400, "'tokens' is a required property"),
    ("/detokenize", {"model": "tiny", "tokens": [1, -2]}, 400, "non-negative integers"),
    ("/detokenize", {"model": "tiny", "tokens": ["a"]}, 400, "non-negative integers"),
    ("/detokenize", {"model": "tiny", "tokens": [10**9]}, 400,
     "token id(s) [1000000000] are out of vocabulary. Vocabulary size: "),
])
def test_bad_requests_are_openai_errors(server, path, body, status, message):
    answer = _post(server, path, body)
    assert answer[0] == status
    assert message in answer[1]["error"]["message"]
    assert answer[1]["error"]["type"] == "invalid_request_error"
    # ... and the server goes on answering.
    assert _post(server, "/tokenize", {"model": "tiny", "prompt": "ok"})[0] == 200


def test_get_is_not_allowed_and_a_non_json_body_is_a_400(server):
    url = f"http://127.0.0.1:{server.openai_port}"
    answer = requests.get(f"{url}/tokenize", timeout=30)
    assert answer.status_code == 405 and "use POST" in answer.json()["error"]["message"]
    answer = requests.post(f"{url}/detokenize", data=b"[1, 2", timeout=30)
    assert answer.status_code == 400 and "not valid JSON" in answer.json()["error"]["message"]


def test_model_cards_carry_vllms_fields(server, client):
    (card,) = client.models.list().data
    assert (card.id, card.root, card.parent, card.max_model_len) == ("tiny", "tiny", None, 256)
    (permission,) = card.permission
    assert permission["object"] == "model_permission" and permission["allow_sampling"]
    assert client.models.retrieve("tiny").max_model_len == 256


def test_version(server):
    answer = requests.get(f"http://127.0.0.1:{server.openai_port}/version", timeout=30)
    from tritium.version import __version__

    assert (answer.status_code, answer.json()) == (200, {"version": __version__})


def test_the_tokenizer_inputs_work_over_triton_generate(server, reference):
    answer = requests.post(f"http://127.0.0.1:{server.http_port}/v2/models/tiny/generate",
                           json={"text_input": "[5, 6, 7]", "detokenize": True}, timeout=60)
    assert answer.json()["text_output"] == reference.tokenizer.decode([5, 6, 7])
