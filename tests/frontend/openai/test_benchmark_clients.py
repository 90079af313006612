"""The LLM benchmark clients, replayed: the requests `vllm bench serve`, aiperf, genai-perf and
guidellm send (recorded from each client run against this server), as they send them, and what
their figures rest on: one streamed chunk or response per generated token (their inter-token
latencies), the token count they asked for with ignore_eos or min_tokens, the finish reason on
the last token's chunk, usage in the last chunk (and on every chunk with vLLM's
continuous_usage_stats), and a refusal of a prompt past max_model_len in the words the clients
tell a context overflow by."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from support.grpc_stream_fixtures import Collector, is_final
from support.llm_fixtures import llm_weights  # noqa: F401
from support.llm_models import llm_repository
from support.server_process import ServerProcess, openai_server

TOKENS = 24
# aiperf 0.13's default AIPERF_AGENTX_CONTEXT_OVERFLOW_SUBSTRINGS: an error whose message holds
# one (case-insensitively) is a context overflow to it.
AIPERF_CONTEXT_OVERFLOW_PHRASES = ("context length", "maximum context", "context_length_exceeded",
                                   "prompt is too long")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, llm_weights: dict[str, Path]):  # noqa: F811
    repo = llm_repository(tmp_path_factory.mktemp("bench_clients_repo"),
                          {"tiny_llama": {"family": "llama"}}, llm_weights)
    with openai_server(repo) as process:
        yield process


def _events(server: ServerProcess, path: str, body: dict[str, Any],
            headers: dict[str, str]) -> list[Any]:
    """POST `body` as the client does (aiohttp's headers) and read the server-sent events: each
    `data: ...` event's JSON, the closing `[DONE]` as the string."""
    connection = http.client.HTTPConnection("127.0.0.1", server.openai_port, timeout=120)
    connection.request("POST", path, json.dumps(body).encode(),
                       {"Content-Type": "application/json", "Accept": "*/*",
                        "Accept-Encoding": "gzip, deflate",
                        "User-Agent": "Python/3.11 aiohttp/3.14.5", **headers})
    response = connection.getresponse()
    assert response.status == 200
    assert response.getheader("content-type").startswith("text/event-stream")
    events = []
    for block in response.read().decode().split("\n\n"):
        if block:
            assert block.startswith("data: "), block
            payload = block[len("data: "):]
            events.append(payload if payload == "[DONE]" else json.loads(payload))
    connection.close()
    return events


def _refusal(server: ServerProcess, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    """POST `body` and read the status and JSON body of an answer that is not a stream."""
    connection = http.client.HTTPConnection("127.0.0.1", server.openai_port, timeout=120)
    connection.request("POST", path, json.dumps(body).encode(),
                       {"Content-Type": "application/json"})
    response = connection.getresponse()
    answer = response.status, json.loads(response.read())
    connection.close()
    return answer


def _token_chunks(events: list[Any]) -> list[dict[str, Any]]:
    """The chunks that carry a choice, less a chat answer's first (the role)."""
    chunks = [e for e in events[:-1] if e["choices"]]
    if "delta" in chunks[0]["choices"][0] and "role" in chunks[0]["choices"][0]["delta"]:
        chunks = chunks[1:]
    return chunks


def _check_stream(events: list[Any]) -> None:
    """TOKENS chunks, one per token, the last with finish_reason `length`; then usage; then
    `[DONE]`."""
    assert events[-1] == "[DONE]"
    chunks = _token_chunks(events)
    assert len(chunks) == TOKENS
    reasons = [c["choices"][0]["finish_reason"] for c in chunks]
    assert reasons == [None] * (TOKENS - 1) + ["length"]
    last = events[-2]
    assert last["choices"] == [] and last["usage"]["completion_tokens"] == TOKENS


def test_vllm_bench_serve_completions(server):
    """`vllm bench serve --backend openai --dataset-name random --ignore-eos`."""
    events = _events(server, "/v1/completions", {
        "model": "tiny_llama", "prompt": "oxponrnrldrowtstutintepsusuouuponvaveswoweezy",
        "repetition_penalty": 1.0, "max_tokens": TOKENS, "logprobs": None, "stream": True,
        "stream_options": {"include_usage": True}, "ignore_eos": True,
    }, {"x-request-id": "bench-bbee635e-0"})
    _check_stream(events)
    assert all(e["object"] == "text_completion" for e in events[:-1])


def test_vllm_bench_serve_chat(server):
    """`vllm bench serve --backend openai-chat --endpoint /v1/chat/completions`: content parts,
    max_completion_tokens."""
    events = _events(server, "/v1/chat/completions", {
        "model": "tiny_llama",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "a tde beronou"}]}],
        "max_completion_tokens": TOKENS, "stream": True,
        "stream_options": {"include_usage": True}, "ignore_eos": True,
    }, {"x-request-id": "bench-de7b2103-0"})
    _check_stream(events)
    assert events[0]["choices"][0]["delta"]["role"] == "assistant"
    assert all(e["object"] == "chat.completion.chunk" for e in events[:-1])


def test_aiperf_chat_with_per_chunk_usage(server):
    """`aiperf profile --endpoint-type chat --streaming --per-chunk-usage --extra-inputs
    ignore_eos:true`: vLLM's continuous_usage_stats, the tokens so far on every chunk."""
    events = _events(server, "/v1/chat/completions", {
        "messages": [{"role": "user", "content": " Exit JULIET O God O Nurse how shall"}],
        "model": "tiny_llama", "stream": True, "max_completion_tokens": TOKENS,
        "ignore_eos": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }, {})
    _check_stream(events)
    counts = [e["usage"]["completion_tokens"] for e in events[:-1]]
    # The role chunk before any token, then one more token per chunk, the last usage chunk.
    assert counts == list(range(TOKENS + 1)) + [TOKENS]
    assert len({e["usage"]["prompt_tokens"] for e in events[:-1]}) == 1


def test_aiperf_counts_a_prompt_past_max_model_len_as_a_context_overflow(server):
    """`aiperf profile --endpoint-type chat --streaming --isl 600` on a model of max_model_len
    512: each request is a 400, and aiperf 0.13 counts one as a context overflow (its
    context_overflow_count) when the message holds a phrase of its allowlist, as vLLM's "This
    model's maximum context length is ..." does. Tritium's own "the prompt (603 tokens) is
    longer than the maximum model length of 512" counted none."""
    status, body = _refusal(server, "/v1/chat/completions", {
        "messages": [{"role": "user", "content": "word " * 600}], "model": "tiny_llama",
        "stream": True, "max_completion_tokens": TOKENS,
        "stream_options": {"include_usage": True},
    })
    assert status == 400
    message = body["error"]["message"]
    assert message.startswith("This model's maximum context length is 512 tokens. However, "
                              "your request has ")
    assert message.endswith(" input tokens. Please reduce the length of the input messages.")
    assert any(phrase in message.lower() for phrase in AIPERF_CONTEXT_OVERFLOW_PHRASES)


def test_guidellm_completions_with_per_chunk_usage(server):
    """`guidellm run --backend kind=openai_http,...,request_format=/v1/completions --data
    kind=synthetic_text,prompt_tokens=..,output_tokens=24`: continuous_usage_stats on
    completions (aiperf asks it of chat only), httpx's headers."""
    events = _events(server, "/v1/completions", {
        "model": "tiny_llama", "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        "max_tokens": TOKENS, "ignore_eos": True, "prompt": "1 0 m0 Finish med",
    }, {"User-Agent": "python-httpx/0.28.1", "Connection": "keep-alive"})
    _check_stream(events)
    counts = [e["usage"]["completion_tokens"] for e in events[:-1]]
    # One more token per chunk, then the last usage chunk.
    assert counts == list(range(1, TOKENS + 1)) + [TOKENS]


def test_genai_perf_kserve_vllm_over_grpc_stream(server):
    """`genai-perf profile --endpoint-type kserve --backend vllm --streaming
    --output-tokens-mean 24 --output-tokens-mean-deterministic`: perf_analyzer's gRPC stream
    with genai-perf's inputs, sampling parameters as strings, min_tokens = max_tokens."""
    values = {"text_input": (b"ooth every passion That in the natures of th", "BYTES"),
              "exclude_input_in_output": (True, "BOOL"), "stream": (True, "BOOL"),
              "sampling_parameters": (json.dumps({"max_tokens": str(TOKENS),
                                                  "min_tokens": str(TOKENS)}).encode(), "BYTES")}
    inputs = []
    for name, (value, datatype) in values.items():
        tensor = grpcclient.InferInput(name, [1], datatype)
        tensor.set_data_from_numpy(np.array([value], dtype=np.object_ if datatype == "BYTES"
                                            else np.bool_))
        inputs.append(tensor)
    collector = Collector()
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        client.start_stream(callback=collector)
        client.async_stream_infer("tiny_llama", inputs, request_id="1")
        items = collector.wait_for(lambda got: any(e is not None or is_final(r)
                                                   for r, e in got), timeout=120)
        client.stop_stream()
    assert [e for _, e in items if e is not None] == []
    # One response per token, only the last final.
    assert [is_final(r) for r, _ in items] == [False] * (TOKENS - 1) + [True]
    assert "".join(r.as_numpy("text_output")[0].decode() for r, _ in items)
