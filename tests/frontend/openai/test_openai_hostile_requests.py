"""Hostile requests on the OpenAI port, against the llm backend's tiny Llama: each is answered
with an OpenAI error body and its status (vLLM's where vLLM has one), and the server keeps
serving the requests beside it and after it.

Before: a seed past 64 bits failed the engine's admission (the request never answered, the
sequences running beside it failed with 500); a NaN temperature or repetition_penalty, or a
repetition_penalty small enough to scale logits to infinity, failed the whole engine step with
500 for every running sequence; n had no bound (100,000 choices kept the model busy for minutes);
a 5000-digit integer, a lone surrogate and a non-text content part were 500s; a 20 MB prompt
held the model's thread for ~30 s and the server grew by gigabytes while it was tokenized.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests

from support.h2_frames import rss_bytes
from support.llm_fixtures import llm_weights  # noqa: F401
from support.llm_models import llm_repository
from support.server_process import ServerProcess, openai_server

MiB = 1024 * 1024
MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, llm_weights: dict[str, Path]):
    repo = llm_repository(tmp_path_factory.mktemp("hostile_repo"),
                          {"tiny": {"family": "llama", "engine": {"max_model_len": 512}}},
                          llm_weights)
    with openai_server(repo) as process:
        yield process


def _url(server: ServerProcess, path: str) -> str:
    return f"http://127.0.0.1:{server.openai_port}{path}"


def _post(server: ServerProcess, path: str, body: dict[str, Any] | bytes) -> tuple[int, Any]:
    if isinstance(body, bytes):
        answer = requests.post(_url(server, path), data=body, timeout=120,
                               headers={"content-type": "application/json"})
    else:
        answer = requests.post(_url(server, path), json=body, timeout=120)
    return answer.status_code, answer.json()


def _completion(server: ServerProcess, **fields: Any) -> tuple[int, Any]:
    return _post(server, "/v1/completions", {"model": "tiny", "prompt": "hi", **fields})


def _assert_error(answer: tuple[int, Any], status: int, text: str) -> None:
    code, body = answer
    assert code == status, body
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert text in body["error"]["message"]


def _assert_serving(server: ServerProcess) -> None:
    status, body = _completion(server, max_tokens=3, ignore_eos=True)
    assert status == 200
    assert body["usage"]["completion_tokens"] == 3


def test_a_seed_past_64_bits_is_refused_while_a_stream_goes_on(server):
    with requests.post(_url(server, "/v1/completions"), stream=True, timeout=120,
                       json={"model": "tiny", "prompt": "hi", "stream": True,
                             "ignore_eos": True, "max_tokens": 400}) as stream:
        lines = stream.iter_lines()
        assert next(line for line in lines if line).startswith(b"data: {")
        _assert_error(_completion(server, seed=2**64), 400, "seed must be between")
        # Choice i has the seed s + i: the second choice's is past the range.
        _assert_error(_completion(server, seed=2**63 - 1, n=2), 400, "seed must be between")
        chunks = [json.loads(line[6:]) for line in lines if line and line != b"data: [DONE]"]
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert "error" not in chunks[-1]
    status, body = _completion(server, seed=-2**63, max_tokens=2)
    assert status == 200 and body["usage"]["completion_tokens"] == 2
    _assert_serving(server)


@pytest.mark.parametrize("field, value", [("temperature", "NaN"), ("temperature", "Infinity"),
                                          ("repetition_penalty", "NaN"),
                                          ("repetition_penalty", "Infinity")])
def test_non_finite_sampling_parameters_are_refused(server, field, value):
    body = b'{"model": "tiny", "prompt": "hi", "%s": %s}' % (field.encode(), value.encode())
    _assert_error(_post(server, "/v1/completions", body), 400,
                  f"{field} must be a finite number")
    _assert_serving(server)


def test_a_repetition_penalty_that_overflows_the_logits_still_samples(server):
    # Seen tokens' logits divided by 1e-300 are infinite: drawn among, never a failed step.
    status, body = _completion(server, repetition_penalty=1e-300, max_tokens=8, ignore_eos=True)
    assert status == 200, body
    assert body["usage"]["completion_tokens"] == 8
    _assert_serving(server)


@pytest.mark.parametrize("n", [0, -1, 129, 100_000])
def test_n_is_between_1_and_128(server, n):
    _assert_error(_completion(server, n=n, max_tokens=1), 400, "n must be between 1 and 128")
    _assert_serving(server)


def test_bodies_python_reads_badly_are_400(server):
    huge = b'{"model": "tiny", "prompt": "hi", "max_tokens": ' + b"9" * 5000 + b"}"
    _assert_error(_post(server, "/v1/completions", huge), 400, "not valid JSON")
    lone = b'{"model": "tiny", "prompt": "hi\\ud800"}'
    _assert_error(_post(server, "/v1/completions", lone), 400, "lone surrogate")
    chat = b'{"model": "tiny", "messages": [{"role": "user", "content": "\\udc00"}]}'
    _assert_error(_post(server, "/v1/chat/completions", chat), 400, "lone surrogate")
    # A pair is one character (what JSON encoders with ASCII output send for an emoji).
    pair = b'{"model": "tiny", "prompt": "hi \\ud83d\\ude00", "max_tokens": 1}'
    assert _post(server, "/v1/completions", pair)[0] == 200
    _assert_serving(server)


@pytest.mark.parametrize("part, text", [
    ({"type": "image_url", "image_url": {"url": "http://example.com/a.png"}},
     "content part type 'image_url' is not supported"),
    ({"type": "input_audio"}, "content part type 'input_audio' is not supported"),
    ({"text": "no type"}, "content part type None is not supported"),
    ({"type": "text", "text": 5}, "'text' must be a string"),
])
def test_content_parts_other_than_text_are_refused(server, part, text):
    messages = [{"role": "user", "content": [{"type": "text", "text": "look"}, part]}]
    _assert_error(_post(server, "/v1/chat/completions", {"model": "tiny", "messages": messages}),
                  400, text)
    _assert_serving(server)


def test_text_parts_and_string_parts_are_joined(server):
    messages = [{"role": "user", "content": [{"type": "text", "text": "a"}, "b"]}]
    status, joined = _post(server, "/tokenize", {"model": "tiny", "messages": messages})
    _, plain = _post(server, "/tokenize", {"model": "tiny",
                                          "messages": [{"role": "user", "content": "ab"}]})
    assert status == 200 and joined["tokens"] == plain["tokens"]


def test_fields_vllm_refuses_or_takes(server):
    _assert_error(_completion(server, stream_options={"include_usage": True}), 400,
                  "Stream options can only be defined when `stream=True`.")
    chat = {"model": "tiny", "messages": MESSAGES, "max_tokens": 1}
    _assert_error(_post(server, "/v1/chat/completions", {**chat, "response_format": {}}), 400,
                  "response_format type None is not supported")
    assert _post(server, "/v1/chat/completions", {**chat, "tool_choice": "none"})[0] == 200
    _assert_error(_post(server, "/v1/chat/completions", {**chat, "tool_choice": "auto"}), 400,
                  "'tool_choice' is not supported")


def test_thousands_of_stop_strings_still_cut_at_the_right_place(server):
    plain = {"temperature": 0, "max_tokens": 24, "ignore_eos": True}
    status, body = _completion(server, **plain)
    assert status == 200, body
    text = body["choices"][0]["text"]
    stop = text[6:9]
    decoys = [f"\u2603{i}" for i in range(10000)]  # never generated: the snowman is not there
    assert "\u2603" not in text
    status, body = _completion(server, **plain, stop=[*decoys, stop])
    assert status == 200, body
    assert body["choices"][0]["text"] == text[:text.index(stop)]
    assert body["choices"][0]["finish_reason"] == "stop"


def test_stop_strings_past_64_ki_characters_in_all_are_refused(server):
    _assert_error(_completion(server, stop=["x" * 1024] * 65), 400,
                  "stop strings may hold at most 65536 characters in all, got 66560")
    _assert_serving(server)


def test_a_prompt_far_past_max_model_len_is_refused_from_its_head(server):
    before = rss_bytes(server.process.pid)
    _assert_error(_completion(server, prompt="abc " * 5_000_000), 400,
                  "This model's maximum context length is 512 tokens. However, your request "
                  "has at least")
    chat = [{"role": "user", "content": "abc " * 2_000_000}]
    _assert_error(_post(server, "/v1/chat/completions", {"model": "tiny", "messages": chat}),
                  400, "This model's maximum context length is 512 tokens.")
    # Tokenized whole, the 20 MB prompt grew the server by 2.4 GB.
    assert rss_bytes(server.process.pid) - before < 500 * MiB
    _assert_serving(server)


def _wait_gauge(server: ServerProcess, name: str, reached: Callable[[float], bool]) -> None:
    deadline = time.monotonic() + 60
    while not reached(value := server.metric(name, "tiny")):
        assert time.monotonic() < deadline, f"{name} stays at {value}"
        time.sleep(0.02)


def _open_stream(port: int, body: dict[str, Any]) -> socket.socket:
    data = json.dumps(body).encode()
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: "
                 b"application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(data), data))
    return sock


@pytest.mark.parametrize("stream", [True, False])
def test_requests_abandoned_by_their_clients_stop_generating(server, stream):
    body = {"model": "tiny", "messages": MESSAGES, "stream": stream, "ignore_eos": True,
            "max_tokens": 400}
    before = server.metric("vllm:generation_tokens_total", "tiny")
    streams = [_open_stream(server.openai_port, body) for _ in range(48)]
    if stream:
        assert streams[0].recv(100).startswith(b"HTTP/1.1 200")
    _wait_gauge(server, "vllm:num_requests_waiting", lambda waiting: waiting > 0)
    for sock in streams:
        sock.close()
    # 48 streams x 400 tokens had they run on; the queued ones are dropped unstarted (and the
    # waiting gauge says so, where it stayed at 32 with the engine idle).
    _wait_gauge(server, "vllm:num_requests_running", lambda running: running == 0)
    _wait_gauge(server, "vllm:num_requests_waiting", lambda waiting: waiting == 0)
    generated = server.metric("vllm:generation_tokens_total", "tiny") - before
    assert generated < 48 * 400 / 4
    _assert_serving(server)
