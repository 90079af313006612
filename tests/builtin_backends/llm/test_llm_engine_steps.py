"""The engine's steps in process (no server): each forward pass mixes a token of every decoding
sequence with prompt chunks of others (vLLM's chunked prefill), and greedy output is still
transformers' own, token for token, for attention of each kind: full (Llama), sliding windows
on every layer (Mistral), soft-capped eager attention alternating with sliding windows
(Gemma-2). The server tests hold the same outputs end to end; these show what each step ran."""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from support.llm_fixtures import PROMPTS, Reference
from support.llm_models import build_model

pytest.importorskip("transformers")

MAX_TOKENS = 24
# Long prompts (several chunks at the budgets below) and short ones, in one batch.
BATCH = [PROMPTS[2], PROMPTS[5], PROMPTS[0], PROMPTS[3], PROMPTS[6]]


class _Request:
    """What the engine needs of a request, recording its tokens."""

    cancelled = False
    grammar = None

    def __init__(self, prompt: list[int], max_tokens: int) -> None:
        from tritium.builtin_backends.llm.sampling import SamplingParams

        self.prompt = prompt
        self.params = SamplingParams(temperature=0, max_tokens=max_tokens)
        self.arrival = time.monotonic()
        self.tokens: list[int] = []
        self.error: Any = None
        self.done = threading.Event()

    def on_output(self, sequence: Any, delta: str, finished: bool) -> None:
        if finished:
            self.tokens = list(sequence.output)
            self.done.set()

    def on_error(self, error: Any) -> None:
        self.error = error
        self.done.set()


class _Source:
    """The model's request queue."""

    def __init__(self) -> None:
        self.queue: queue.Queue[_Request] = queue.Queue()

    def take(self, limit: int, wait: float) -> list[_Request]:
        taken: list[_Request] = []
        try:
            taken.append(self.queue.get(timeout=wait) if wait else self.queue.get_nowait())
            while len(taken) < limit:
                taken.append(self.queue.get_nowait())
        except queue.Empty:
            pass
        return taken

    def waiting(self) -> int:
        return self.queue.qsize()


class _Served:
    """An engine on `folder`'s model, its forward passes recorded as (decode tokens, chunk
    lengths)."""

    def __init__(self, folder: Path, budget: int, chunked: bool = True) -> None:
        import torch

        from tritium.builtin_backends.llm.engine import Engine
        from tritium.builtin_backends.llm.runner import Checkpoint, ModelRunner
        from tritium.builtin_backends.llm.settings import EngineSettings

        settings = EngineSettings(model=folder, tokenizer=folder, max_num_seqs=8,
                                  max_num_batched_tokens=budget, enable_chunked_prefill=chunked)
        runner = ModelRunner.load(Checkpoint.open(folder, folder, None), "auto",
                                  torch.device("cpu"))
        self.steps: list[tuple[int, list[int]]] = []
        step = runner.step

        def recorded(store: Any, decode: list, chunks: list) -> Any:
            self.steps.append((len(decode), [len(chunk.tokens) for chunk in chunks]))
            return step(store, decode, chunks)

        runner.step = recorded  # type: ignore[method-assign]
        self.source = _Source()
        self.engine = Engine("steps", runner, settings, self.source, None)

    def __enter__(self) -> _Served:
        self.engine.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.engine.stop()

    def send(self, prompt: list[int], max_tokens: int = MAX_TOKENS) -> _Request:
        request = _Request(prompt, max_tokens)
        self.source.queue.put(request)
        return request


def _tokens(requests: list[_Request]) -> list[list[int]]:
    for request in requests:
        assert request.done.wait(120), "no answer within 120 s"
        assert request.error is None, request.error
    return [request.tokens for request in requests]


@pytest.fixture(scope="module", params=["llama", "mistral_sliding", "gemma2"])
def model(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    folder = build_model(tmp_path_factory.mktemp(request.param), request.param, seed=3)
    reference = Reference(folder)
    prompts = [reference.tokenizer(prompt).input_ids for prompt in BATCH]
    expected = [reference.greedy_tokens(prompt, MAX_TOKENS) for prompt in BATCH]
    assert len({tuple(tokens) for tokens in expected}) == len(expected)
    return folder, prompts, expected


def test_steps_that_mix_decode_and_prefill_give_transformers_greedy_tokens(model):
    """A budget of 12 tokens: the long prompts take several chunks, the last beside decoding
    rows, and one step prefills the end of a prompt and the start of the next."""
    folder, prompts, expected = model
    with _Served(folder, budget=12) as served:
        assert _tokens([served.send(prompt) for prompt in prompts]) == expected
    assert all(decoding + sum(chunks) <= 12 for decoding, chunks in served.steps)
    assert any(decoding and chunks for decoding, chunks in served.steps), served.steps
    assert any(len(chunks) > 1 for _, chunks in served.steps), served.steps


def test_whole_prompts_without_chunked_prefill_give_the_same_tokens(model):
    folder, prompts, expected = model
    with _Served(folder, budget=8, chunked=False) as served:
        assert _tokens([served.send(prompt) for prompt in prompts]) == expected
    chunk_lengths = sorted(n for _, chunks in served.steps for n in chunks)
    assert chunk_lengths == sorted(len(prompt) for prompt in prompts)


def test_a_long_prompt_never_runs_a_pass_without_the_decoding_streams(model):
    """Streams decoding when a long prompt arrives get a token in every step it prefills."""
    folder, prompts, _ = model
    long = prompts[1] * 3
    with _Served(folder, budget=12) as served:
        streams = [served.send(prompts[i], 400) for i in (2, 3)]  # decode till cancelled
        while not any(decoding == 2 for decoding, _ in served.steps):
            time.sleep(0.01)
        arrived = len(served.steps)  # both streams are past their prompts from here on
        _tokens([served.send(long, 4)])
        for stream in streams:
            stream.cancelled = True  # type: ignore[misc]
    prefilling = [step for step in served.steps[arrived:] if step[1]]
    assert sum(sum(chunks) for _, chunks in prefilling) == len(long)
    assert len(prefilling) > 1  # the long prompt took several steps...
    assert all(decoding == 2 for decoding, _ in prefilling)  # ...each with both streams
