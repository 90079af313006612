"""The llm backend through a real server: Triton's vLLM-backend interface over gRPC streaming and
the generate extension, held token for token to transformers' own greedy generate."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from support.grpc_stream_fixtures import Collector, is_final
from support.llm_fixtures import (  # noqa: F401
    PROMPTS,
    Reference,
    generate,
    llm_weights,
    text_inputs,
)
from support.llm_models import FAMILIES, llm_repository
from support.server_process import ServerProcess

MODELS = {
    # A small step budget: the longer prompts are prefilled in chunks beside the decode tokens.
    "llama": {"family": "llama", "engine": {"max_num_seqs": 8, "max_num_batched_tokens": 16}},
    "qwen2": {"family": "qwen2"},
    "mistral": {"family": "mistral"},
    "gpt2": {"family": "gpt2", "engine": {"dtype": "float32"}},
    "llama_one": {"family": "llama", "engine": {"max_num_seqs": 1}},
    # A Triton vLLM-backend repository as its users write it: no vLLM backend in any
    # --backend-directory, so the llm backend serves it.
    "as_vllm": {"family": "llama", "backend": "vllm",
                "config": "instance_group [{ count: 1, kind: KIND_MODEL }]\n",
                "engine": {"model": ".", "disable_log_requests": True,
                           "gpu_memory_utilization": 0.5, "enforce_eager": True}},
}
BAD_MODELS = {
    "bad_setting": {"family": "llama", "engine": {"max_num_seqs": 2, "beam_width": 4}},
    "bad_folder": {"family": "llama", "engine": {"model": "no_such_folder"}},
    "bad_dtype": {"family": "llama", "engine": {"dtype": "int8"}},
    "bad_budget": {"family": "llama", "engine": {"max_num_seqs": 8, "max_num_batched_tokens": 4}},
    "missing_weight": {"family": "llama"},  # its checkpoint lacks model.norm.weight (below)
}


def _drop_weight(version: Path, key: str) -> None:
    """Replace the version's weights (a symlink) by a copy without `key`."""
    from safetensors.torch import load_file, save_file

    weights = version / "model.safetensors"
    tensors = load_file(weights)
    del tensors[key]
    weights.unlink()
    save_file(tensors, weights, metadata={"format": "pt"})


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, llm_weights: dict[str, Path]):
    repo = llm_repository(tmp_path_factory.mktemp("llm_repo"), {**MODELS, **BAD_MODELS},
                          llm_weights)
    _drop_weight(repo / "missing_weight" / "1", "model.norm.weight")
    loads = [f"--load-model={name}" for name in MODELS]
    with ServerProcess([repo], "--model-control-mode=explicit", *loads) as process:
        yield process


@pytest.fixture(scope="module")
def references(llm_weights: dict[str, Path]) -> dict[str, Reference]:
    return {family: Reference(llm_weights[family]) for family in FAMILIES}


@pytest.fixture
def grpc_client(server):
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        yield client


class Streams:
    """One gRPC stream; responses gathered per request id, in arrival order."""

    def __init__(self, client: grpcclient.InferenceServerClient) -> None:
        self.client = client
        self.collector = Collector()
        client.start_stream(callback=self.collector)

    def send(self, model: str, request_id: str, prompt: str, sampling: dict[str, Any],
             stream: bool = True, **switches: bool) -> None:
        self.client.async_stream_infer(model, text_inputs(prompt, sampling, stream, **switches),
                                       request_id=request_id)

    def responses(self, request_id: str) -> list[Any]:
        return [(r, e) for r, e in self.collector.items
                if (r is not None and r.get_response().id == request_id)
                or (e is not None and request_id in str(e))]

    def done(self, ids: list[str], timeout: float = 120.0) -> None:
        def finished(items: list) -> bool:
            ended = {r.get_response().id for r, e in items if r is not None and is_final(r)}
            failed = [e for _, e in items if e is not None]
            return failed != [] or all(i in ended for i in ids)
        self.collector.wait_for(finished, timeout)
        errors = [e for _, e in self.collector.items if e is not None]
        assert not errors, errors

    def text(self, request_id: str) -> str:
        return "".join(r.as_numpy("text_output")[0].decode()
                       for r, _ in self.responses(request_id))

    def close(self) -> None:
        self.client.stop_stream()


def _greedy(max_tokens: int) -> dict[str, Any]:
    return {"temperature": 0, "max_tokens": max_tokens}


# -- the configuration --------------------------------------------------------------------------


def test_a_config_naming_only_the_backend_is_completed_as_the_vllm_backends(server):
    with httpclient.InferenceServerClient(server.http_url) as client:
        config = client.get_model_config("qwen2")
    assert config["model_transaction_policy"] == {"decoupled": True}
    assert config["max_batch_size"] == 0
    inputs = {i["name"]: (i["data_type"], i["dims"], i.get("optional", False))
              for i in config["input"]}
    assert inputs["text_input"] == ("TYPE_STRING", [1], False)
    for name in ("stream", "exclude_input_in_output", "return_finish_reason", "return_logprobs"):
        assert inputs[name] == ("TYPE_BOOL", [1], True)
    assert inputs["sampling_parameters"] == ("TYPE_STRING", [1], True)
    outputs = {o["name"]: o["data_type"] for o in config["output"]}
    assert outputs["text_output"] == "TYPE_STRING"
    assert outputs["num_output_tokens"] == "TYPE_UINT32"


# -- correctness against transformers ------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_greedy_output_equals_transformers_generate(server, grpc_client, references, family):
    reference = references[family]
    streams = Streams(grpc_client)
    ids = []
    for index, prompt in enumerate(PROMPTS[:4]):
        # One at a time: each request runs alone in the engine.
        request_id = f"{family}-{index}"
        streams.send(family, request_id, prompt, _greedy(24), return_num_output_tokens=True)
        streams.done([request_id])
        ids.append(request_id)
        expected, count = reference.greedy_text(prompt, 24)
        assert streams.text(request_id) == expected, (family, prompt)
        counted = sum(int(r.as_numpy("num_output_tokens")[0])
                      for r, _ in streams.responses(request_id))
        assert counted == count
    streams.close()


def test_eight_prompts_in_one_continuous_batch_with_requests_joining_mid_flight(
        server, grpc_client, references):
    reference = references["llama"]
    streams = Streams(grpc_client)
    first = [(f"early-{i}", PROMPTS[i], 64) for i in range(4)]
    later = [(f"late-{i}", PROMPTS[4 + i], 12 + 8 * i) for i in range(4)]
    for request_id, prompt, max_tokens in first:
        streams.send("llama", request_id, prompt, _greedy(max_tokens))
    # Once every early request is decoding, the others join the running batch.
    streams.collector.wait_for(
        lambda items: {r.get_response().id for r, _ in items if r is not None}
        >= {i for i, _, _ in first})
    still_running = [i for i, _, _ in first
                     if not any(is_final(r) for r, _ in streams.responses(i))]
    for request_id, prompt, max_tokens in later:
        streams.send("llama", request_id, prompt, _greedy(max_tokens))
    streams.done([i for i, _, _ in first + later])
    assert still_running, "the late requests should have joined while early ones decoded"
    for request_id, prompt, max_tokens in first + later:
        expected, _ = reference.greedy_text(prompt, max_tokens)
        assert streams.text(request_id) == expected, request_id
    streams.close()


# -- streaming ------------------------------------------------------------------------------------


def test_stream_sends_text_pieces_in_order_and_only_the_last_is_final(server, grpc_client,
                                                                      references):
    streams = Streams(grpc_client)
    streams.send("llama", "s", PROMPTS[2], _greedy(30), return_finish_reason=True)
    streams.done(["s"])
    responses = [r for r, _ in streams.responses("s")]
    assert len(responses) > 1
    assert [is_final(r) for r in responses] == [False] * (len(responses) - 1) + [True]
    reasons = [r.as_numpy("finish_reason")[0].decode() for r in responses]
    assert reasons[:-1] == ["None"] * (len(responses) - 1)
    expected, count = references["llama"].greedy_text(PROMPTS[2], 30)
    assert reasons[-1] == ("stop" if count < 30 else "length")
    assert streams.text("s") == expected
    streams.close()


def test_generate_and_generate_stream(server, references):
    expected, _ = references["gpt2"].greedy_text(PROMPTS[0], 12)
    status, body = generate(server, "gpt2", {"text_input": PROMPTS[0], "max_tokens": 12,
                                             "temperature": 0})
    assert status == 200
    # Not streaming: one response holding the prompt, then the output (the vLLM backend's way).
    assert body["text_output"] == PROMPTS[0] + expected
    status, body = generate(server, "gpt2", {
        "text_input": PROMPTS[0], "exclude_input_in_output": True,
        "sampling_parameters": json.dumps({"max_tokens": 12, "temperature": 0})})
    assert (status, body["text_output"]) == (200, expected)
    status, events = generate(server, "gpt2", {"text_input": PROMPTS[0], "stream": True,
                                               "max_tokens": 12, "temperature": 0}, stream=True)
    assert status == 200 and len(events) > 1
    assert "".join(e["text_output"] for e in events) == expected


def test_a_vllm_backend_repository_is_served_without_vllm(server, references):
    expected, _ = references["llama"].greedy_text(PROMPTS[0], 8)
    status, body = generate(server, "as_vllm", {
        "text_input": PROMPTS[0], "exclude_input_in_output": True,
        "sampling_parameters": json.dumps({"max_tokens": 8, "temperature": 0})})
    assert (status, body["text_output"]) == (200, expected)
    config = httpclient.InferenceServerClient(server.http_url).get_model_config("as_vllm")
    assert config["backend"] == "vllm"
    assert any("served by the built-in 'llm' backend" in m for m in server.log_messages())


# -- the engine's limits ---------------------------------------------------------------------------


def test_max_num_seqs_queues_the_rest(server, grpc_client, references):
    """llama_one runs one sequence at a time: a second request waits in the model's queue (the
    scheduler's gauges on /metrics say so) and starts once the first one's slot is free."""
    streams = Streams(grpc_client)
    streams.send("llama_one", "first", "T", {"max_tokens": 300, "ignore_eos": True,
                                             "temperature": 0})
    streams.collector.wait_count(1)  # decoding: the one slot is taken
    streams.send("llama_one", "queued", PROMPTS[3], _greedy(15))
    server.wait_metric("vllm:num_requests_waiting", "llama_one", 1)
    assert server.metric("vllm:num_requests_running", "llama_one") == 1
    streams.done(["first", "queued"])
    order = [r.get_response().id for r, _ in streams.collector.items]
    assert order.index("queued") > max(i for i, rid in enumerate(order) if rid == "first")
    assert streams.text("queued") == references["llama"].greedy_text(PROMPTS[3], 15)[0]
    streams.close()


def test_max_tokens_ends_with_length_and_counts_tokens(server):
    status, body = generate(server, "mistral", {
        "text_input": "The", "max_tokens": 7, "ignore_eos": True, "temperature": 0.8,
        "seed": 5, "exclude_input_in_output": True, "return_finish_reason": True,
        "return_num_input_tokens": True, "return_num_output_tokens": True})
    assert status == 200
    assert (body["finish_reason"], body["num_output_tokens"]) == ("length", 7)
    assert body["num_input_tokens"] >= 1


def test_prompt_longer_than_max_model_len_is_refused(server):
    status, body = generate(server, "llama", {"text_input": "word " * 600, "max_tokens": 2})
    assert status == 400
    assert "This model's maximum context length is 512 tokens. However, your request has" \
        in body["error"]


def test_cancelled_request_frees_its_slot(server, references):
    """llama_one has one slot. A client that goes away mid-stream frees it at the next step:
    the next request runs long before the first would have reached max_model_len."""
    before = server.metric("vllm:generation_tokens_total", "llama_one")
    body = json.dumps({"text_input": "T", "stream": True, "max_tokens": 500,
                       "ignore_eos": True, "temperature": 0}).encode()
    with socket.create_connection(("127.0.0.1", server.http_port)) as sock:
        sock.sendall(b"POST /v2/models/llama_one/generate_stream HTTP/1.1\r\nhost: x\r\n"
                     b"content-length: %d\r\n\r\n%s" % (len(body), body))
        received = b""
        while b"data: " not in received:  # the first token came: the slot is taken
            chunk = sock.recv(65536)
            assert chunk, received
            received += chunk
    status, after_cancel = generate(server, "llama_one", {
        "text_input": PROMPTS[0], "max_tokens": 10, "temperature": 0,
        "exclude_input_in_output": True})
    assert status == 200
    assert after_cancel["text_output"] == references["llama"].greedy_text(PROMPTS[0], 10)[0]
    generated = server.metric("vllm:generation_tokens_total", "llama_one") - before
    assert generated < 500, "the cancelled request kept its slot until it finished"


def test_a_cancelled_grpc_stream_frees_the_slot(server, references):
    before = server.metric("vllm:generation_tokens_total", "llama_one")
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        streams = Streams(client)
        streams.send("llama_one", "long", "T", {"max_tokens": 500, "ignore_eos": True,
                                                "temperature": 0})
        streams.collector.wait_count(1)  # decoding: the one slot is taken
        client.stop_stream(cancel_requests=True)
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        streams = Streams(client)
        streams.send("llama_one", "next", PROMPTS[1], _greedy(10))
        streams.done(["next"])
        assert streams.text("next") == references["llama"].greedy_text(PROMPTS[1], 10)[0]
        streams.close()
    assert server.metric("vllm:generation_tokens_total", "llama_one") - before < 500


# -- sampling ------------------------------------------------------------------------------------


def test_stop_strings_end_the_text_before_them(server, references):
    full, _ = references["llama"].greedy_text(PROMPTS[0], 30)
    stop = full[10:13]
    cut = full[: full.index(stop)]
    status, body = generate(server, "llama", {
        "text_input": PROMPTS[0], "max_tokens": 30, "temperature": 0, "stop": stop,
        "exclude_input_in_output": True, "return_finish_reason": True})
    assert (status, body["text_output"], body["finish_reason"]) == (200, cut, "stop")
    status, events = generate(server, "llama", {
        "text_input": PROMPTS[0], "max_tokens": 30, "temperature": 0, "stream": True,
        "sampling_parameters": json.dumps({"stop": [stop], "include_stop_str_in_output": True,
                                           "max_tokens": 30, "temperature": 0})}, stream=True)
    assert "".join(e["text_output"] for e in events) == cut + stop


def test_a_seed_gives_the_same_sample_whatever_runs_beside_it(server, grpc_client):
    sampling = {"temperature": 1.0, "top_p": 0.9, "top_k": 50, "max_tokens": 20,
                "ignore_eos": True}
    streams = Streams(grpc_client)
    streams.send("qwen2", "alone", PROMPTS[1], {**sampling, "seed": 1234})
    streams.done(["alone"])
    for index in range(3):
        streams.send("qwen2", f"other-{index}", PROMPTS[index], {**sampling, "seed": index})
    streams.send("qwen2", "again", PROMPTS[1], {**sampling, "seed": 1234})
    streams.send("qwen2", "different", PROMPTS[1], {**sampling, "seed": 99})
    streams.done(["again", "different", "other-0", "other-1", "other-2"])
    assert streams.text("again") == streams.text("alone")
    assert streams.text("different") != streams.text("alone")
    streams.close()


# -- bad input and bad models ----------------------------------------------------------------------


@pytest.mark.parametrize("document, message", [
    ({"text_input": "x", "max_tokens": 4, "best_of": 2},
     "best_of must be n (1), got 2"),
    ({"text_input": "x", "n": 2}, "n must be 1"),
    ({"text_input": "x", "temperature": -1}, "temperature must be non-negative"),
    ({"text_input": "x", "top_p": 0}, "top_p must be in (0, 1]"),
    ({"text_input": "x", "max_tokens": "many"}, "'max_tokens' must be int"),
    ({"text_input": "x", "sampling_parameters": "{not json"},
     "sampling_parameters is not valid JSON"),
    ({"text_input": "x", "stream": True, "exclude_input_in_output": False},
     "When streaming, `exclude_input_in_output` = False is not allowed."),
    ({"text_input": "", "max_tokens": 2}, "the prompt is empty"),
    ({"text_input": "[1]", "apply_chat_template": True}, "JSON list of"),
])
def test_bad_requests_are_invalid_arg_and_the_server_keeps_serving(server, document, message):
    status, body = generate(server, "gpt2", document)
    assert status == 400
    assert message in body["error"]
    status, body = generate(server, "gpt2", {"text_input": "x", "max_tokens": 2})
    assert status == 200


def test_bad_requests_over_grpc_get_invalid_argument(server, grpc_client):
    streams = Streams(grpc_client)
    streams.send("llama", "bad", "x", {"n": 3})
    items = streams.collector.wait_count(1)
    result, error = items[0]
    assert isinstance(error, InferenceServerException)
    # Triton's stream carries the error's message (not its code) in the stream response.
    assert "n must be 1, got 3" in str(error)
    streams.close()


@pytest.mark.parametrize("model, message", [
    ("bad_setting", "unknown engine setting(s) beam_width"),
    ("bad_folder", "'no_such_folder' is not (the llm backend never downloads models)"),
    ("bad_dtype", "dtype 'int8'"),
    ("bad_budget", "max_num_batched_tokens (4) must be greater than or equal to max_num_seqs (8)"),
    # Left as initialised, the weight would make the model answer garbage while ready.
    ("missing_weight", "does not hold every weight of LlamaForCausalLM: missing "
                       "model.norm.weight; check that the weights files match config.json"),
])
def test_a_bad_model_fails_to_load_with_its_reason(server, model, message):
    with httpclient.InferenceServerClient(server.http_url) as client:
        with pytest.raises(InferenceServerException) as failure:
            client.load_model(model)
        assert message in str(failure.value)
        assert client.is_model_ready("llama")


# -- metrics -------------------------------------------------------------------------------------


def test_token_counts_and_latencies_are_metrics(server):
    """Usage counts, time to first token and inter-token latency of each request, on /metrics
    under the vLLM backend's names (recorded before the request's last response is sent)."""
    names = ("vllm:generation_tokens_total", "vllm:prompt_tokens_total",
             "vllm:time_to_first_token_seconds_count", "vllm:time_to_first_token_seconds_sum",
             "vllm:time_per_output_token_seconds_count", "vllm:e2e_request_latency_seconds_count",
             "vllm:request_generation_tokens_sum", "vllm:request_prompt_tokens_count")
    before = {name: server.metric(name, "gpt2") for name in names}
    status, body = generate(server, "gpt2", {
        "text_input": "The quick", "max_tokens": 6, "ignore_eos": True, "temperature": 0,
        "return_num_input_tokens": True})
    assert status == 200
    grown = {name: server.metric(name, "gpt2") - before[name] for name in names}
    assert grown["vllm:generation_tokens_total"] == 6
    assert grown["vllm:prompt_tokens_total"] == body["num_input_tokens"] > 0
    assert grown["vllm:time_to_first_token_seconds_count"] == 1
    assert grown["vllm:time_to_first_token_seconds_sum"] > 0
    assert grown["vllm:time_per_output_token_seconds_count"] == 5  # the gaps between 6 tokens
    assert grown["vllm:e2e_request_latency_seconds_count"] == 1
    assert grown["vllm:request_generation_tokens_sum"] == 6
    assert grown["vllm:request_prompt_tokens_count"] == 1
