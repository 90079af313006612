"""The llm suite of `make bench`: the llm backend's continuous batching against one request at
a time and against static batches.

Two workloads of streaming requests arriving 20 ms apart, each with its own prompt length and
output length (ignore_eos, so every side generates the same number):
- small: a tiny Llama-family model (hidden 64, 2 layers), 16 requests, prompts of 8 to 100
  tokens, outputs of 16 to 128;
- under load (issue 32's): a Llama-shaped model of hidden 512 and 8 layers, 32 requests,
  prompts of 16 to 220 tokens, outputs of 16 to 128: long prompts arrive while other streams
  decode, which is where a step that mixes prefill chunks with decode tokens keeps the
  inter-token latency's p99 near its p50.
Three ways to serve them, each with one CPU core and one torch thread:
- engine: Tritium serving the model on the llm backend (max_num_seqs 16), the requests sent over
  one gRPC stream as they arrive; times are taken at the client, so they include the server
  (gRPC, detokenization) as a user sees it;
- one at a time: transformers' `generate` (greedy) per request, in arrival order, in process;
- static batch: transformers' `generate` on one left-padded batch of all 16, started once the
  16th has arrived, run until the longest output is done (what a server without iteration-level
  batching does).
Output tokens/s counts each request's own tokens over the time from the first arrival to the
last token. Time to first token runs from a request's arrival; inter-token latency is the gap
between a request's consecutive tokens.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from loadgen import machine_load

ARRIVAL_GAP_S = 0.02


class Workload:
    """A model shape and the requests sent to it."""

    def __init__(self, title: str, sizes: dict[str, int], requests: int,
                 prompts: tuple[int, int], static_batch: bool) -> None:
        self.title = title
        self.sizes = sizes  # build_model's dimensions (empty: the tests' tiny model)
        self.requests = requests
        self.prompts = prompts  # shortest, longest prompt in tokens
        self.static_batch = static_batch


WORKLOADS = [
    Workload("tiny Llama, 16 streaming requests 20 ms apart", {}, 16, (8, 100), True),
    Workload("under load: Llama-shaped, hidden 512, 8 layers, 32 streaming requests 20 ms "
             "apart, prompts of 16-220 tokens", {
                 "hidden_size": 512, "intermediate_size": 1376, "num_hidden_layers": 8,
                 "num_attention_heads": 8, "num_key_value_heads": 8,
                 "initializer_range": 0.02}, 32, (16, 220), False),
]


def _requests(tokenizer: Any, workload: Workload) -> list[tuple[str, int]]:
    """(prompt, output tokens) per request: prompts spread over the workload's range, outputs
    of 16..128 tokens."""
    shortest, longest = workload.prompts
    words = ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "while",
             "tritium", "serves", "models", "like", "triton", "does", "and", "continuous",
             "batching", "admits", "new", "requests"]
    work = []
    for index in range(workload.requests):
        target = shortest + (index * 37) % (longest - shortest + 1)
        prompt = ""
        position = index
        while len(tokenizer(prompt).input_ids) < target:
            prompt += words[position % len(words)] + " "
            position += 3
        work.append((prompt.strip(), 16 + (index * 53) % 113))
    return work


class _Clock:
    """A transformers streamer recording when each generated step arrives."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self._prompt = True

    def put(self, value: Any) -> None:
        if self._prompt:  # generate first hands over the prompt
            self._prompt = False
            return
        self.times.append(time.monotonic())

    def end(self) -> None:
        pass


def _stats(name: str, arrivals: list[float], token_times: list[list[float]]) -> dict[str, Any]:
    tokens = sum(len(t) for t in token_times)
    span = max(t[-1] for t in token_times) - min(arrivals)
    ttft = [t[0] - a for t, a in zip(token_times, arrivals, strict=True)]
    gaps = [b - a for t in token_times for a, b in zip(t, t[1:], strict=False)]
    return {"name": name, "tokens": tokens, "tps": tokens / span,
            "ttft50": np.percentile(ttft, 50), "ttft99": np.percentile(ttft, 99),
            "itl50": np.percentile(gaps, 50), "itl99": np.percentile(gaps, 99)}


def _one_at_a_time(model: Any, tokenizer: Any, work: list[tuple[str, int]]) -> dict[str, Any]:
    import torch

    start = time.monotonic()
    arrivals = [start + i * ARRIVAL_GAP_S for i in range(len(work))]
    token_times = []
    for arrival, (prompt, count) in zip(arrivals, work, strict=True):
        time.sleep(max(0.0, arrival - time.monotonic()))
        ids = tokenizer(prompt, return_tensors="pt").input_ids
        clock = _Clock()
        with torch.inference_mode():
            model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                           max_new_tokens=count, min_new_tokens=count, streamer=clock,
                           pad_token_id=tokenizer.pad_token_id)
        token_times.append(clock.times)
    return _stats("transformers.generate, one at a time", arrivals, token_times)


def _static_batch(model: Any, tokenizer: Any, work: list[tuple[str, int]]) -> dict[str, Any]:
    import torch

    start = time.monotonic()
    arrivals = [start + i * ARRIVAL_GAP_S for i in range(len(work))]
    time.sleep(max(0.0, arrivals[-1] - time.monotonic()))  # the batch is full
    tokenizer.padding_side = "left"
    batch = tokenizer([p for p, _ in work], return_tensors="pt", padding=True)
    longest = max(c for _, c in work)
    clock = _Clock()
    with torch.inference_mode():
        model.generate(**batch, do_sample=False, max_new_tokens=longest,
                       min_new_tokens=longest, streamer=clock,
                       pad_token_id=tokenizer.pad_token_id)
    token_times = [clock.times[:count] for _, count in work]
    return _stats(f"transformers.generate, static batch of {len(work)}", arrivals, token_times)


def _engine(folder: Path, work: list[tuple[str, int]], pin: list[str]) -> dict[str, Any]:
    import tritonclient.grpc as grpcclient

    from support.llm_models import llm_repository
    from support.server_process import ServerProcess

    with tempfile.TemporaryDirectory() as tmp:
        repo = llm_repository(Path(tmp), {"tiny_llama": {
            "family": "llama", "engine": {"max_num_seqs": len(work)}}}, {"llama": folder})
        env = {"OMP_NUM_THREADS": "1"}
        with ServerProcess([repo], env=env, prefix=pin) as server:
            client = grpcclient.InferenceServerClient(server.grpc_url)
            times: dict[str, list[tuple[float, int]]] = {str(i): [] for i in range(len(work))}
            finals = threading.Semaphore(0)
            errors = []

            def on_response(result: Any, error: Any) -> None:
                now = time.monotonic()
                if error is not None:
                    errors.append(error)
                    finals.release()
                    return
                response = result.get_response()
                count = int(result.as_numpy("num_output_tokens")[0])
                times[response.id].append((now, count))
                if response.parameters["triton_final_response"].bool_param:
                    finals.release()

            def inputs(prompt: str, count: int) -> list[Any]:
                values = {"text_input": prompt.encode(), "stream": True,
                          "return_num_output_tokens": True,
                          "sampling_parameters": json.dumps({
                              "temperature": 0, "max_tokens": count, "ignore_eos": True})}
                made = []
                for name, value in values.items():
                    kind = "BOOL" if isinstance(value, bool) else "BYTES"
                    tensor = grpcclient.InferInput(name, [1], kind)
                    tensor.set_data_from_numpy(np.array(
                        [value], dtype=np.bool_ if kind == "BOOL" else np.object_))
                    made.append(tensor)
                return made

            client.start_stream(callback=on_response)
            # Warm up (first-call costs) before the measured run.
            client.async_stream_infer("tiny_llama", inputs("warm up", 4), request_id="0")
            finals.acquire()
            times["0"].clear()
            start = time.monotonic()
            arrivals = [start + i * ARRIVAL_GAP_S for i in range(len(work))]
            for index, (arrival, (prompt, count)) in enumerate(zip(arrivals, work, strict=True)):
                time.sleep(max(0.0, arrival - time.monotonic()))
                client.async_stream_infer("tiny_llama", inputs(prompt, count),
                                          request_id=str(index))
            for _ in work:
                finals.acquire()
            client.stop_stream()
            client.close()
            if errors:
                raise RuntimeError(errors[0])
    token_times = []
    for index in range(len(work)):
        # A response may carry several tokens (text held back mid-character): spread evenly.
        series, previous = [], arrivals[index]
        for moment, count in times[str(index)]:
            series += [previous + (moment - previous) * (k + 1) / count for k in range(count)] \
                if count > 1 else [moment] * count
            previous = moment
        token_times.append(series)
    return _stats("llm backend (continuous batching), over gRPC", arrivals, token_times)


def llm_suite(pin: list[str]) -> str:
    return "\n\n".join(_table(workload, pin) for workload in WORKLOADS)


def _table(workload: Workload, pin: list[str]) -> str:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from support.llm_models import build_model

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_model(Path(tmp) / "llama", "llama", **workload.sizes)
        tokenizer = AutoTokenizer.from_pretrained(folder)
        model = AutoModelForCausalLM.from_pretrained(folder).eval()
        work = _requests(tokenizer, workload)
        rows = [_engine(folder, work, pin), _one_at_a_time(model, tokenizer, work)]
        if workload.static_batch:
            rows.append(_static_batch(model, tokenizer, work))
    base = rows[1]["tps"]
    lines = [
        f"### llm: continuous batching vs transformers.generate ({workload.title}; "
        f"{machine_load()})",
        "",
        "| serving | output tokens | tokens/s | vs one at a time | TTFT p50 (ms) | TTFT p99 (ms) "
        "| ITL p50 (ms) | ITL p99 (ms) | ITL p99/p50 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['name']} | {row['tokens']} | {row['tps']:.0f} | {row['tps'] / base:.1f}x "
            f"| {row['ttft50'] * 1e3:.1f} | {row['ttft99'] * 1e3:.1f} "
            f"| {row['itl50'] * 1e3:.2f} | {row['itl99'] * 1e3:.2f} "
            f"| {row['itl99'] / row['itl50']:.1f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here.parent / "tests"))
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    print(llm_suite([]))
