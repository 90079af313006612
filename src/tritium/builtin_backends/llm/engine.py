"""The engine: iteration-level (continuous) batching over the KV slots, one thread per instance.

MindIE's LLM manager and vLLM's engine loop, on the instance's device (runner.py): between two
steps the engine admits waiting requests from the model's request queue (up to `max_num_seqs`
running); each step is one forward pass over a token of every sequence past its prompt and,
within the step's budget of `max_num_batched_tokens` tokens (decode tokens count), chunks of the
prompts still to prefill, as vLLM's chunked prefill schedules them: a long prompt delays the
running streams by one step's chunk, never by a pass of its own. The engine samples each
sequence's next token with its own parameters (on the device, the tokens read back in one copy;
logprobs, logit_bias and penalties cost a step only for the sequences that ask for them), hands
the new text to the request's task, and retires the sequences that finished (EOS, a stop
string, max_tokens, max_model_len) or whose client went away (cancelled: its slot is free at
the next step).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from typing import Any, Protocol

import torch

from tritium.backend import TritonError

from .detokenizer import IncrementalDetokenizer
from .logprobs import TokenLogprobs, logprobs_of
from .metrics import EngineMetrics
from .processors import LogitsAdjuster
from .runner import Chunk, ModelRunner
from .sampling import SamplingParams, request_generator, sample
from .settings import EngineSettings

log = logging.getLogger("tritium.backend.llm")


class EngineRequest(Protocol):
    """What the engine needs of a request (the backend's InferTask provides it)."""

    prompt: list[int]
    params: SamplingParams
    arrival: float
    grammar: Any  # a structured output's compiled grammar (guided_decoding.py), or None

    @property
    def cancelled(self) -> bool: ...

    def on_output(self, sequence: Sequence, delta: str, finished: bool) -> None: ...

    def on_error(self, error: TritonError) -> None: ...


class RequestSource(Protocol):
    """The model's request queue (the model state holds it; every instance's engine takes)."""

    def take(self, limit: int, wait: float) -> list[EngineRequest]: ...

    def waiting(self) -> int: ...


class Sequence:
    """One running request: its tokens, its slot, its text so far and how it ended."""

    def __init__(self, request: EngineRequest, row: int, settings: EngineSettings,
                 runner: ModelRunner, seeds: random.Random) -> None:
        self.request = request
        self.row = row
        self.prompt = request.prompt
        self.params = request.params
        self.output: list[int] = []
        self.computed = 0  # prompt tokens already in the slot
        self.generator = request_generator(self.params, seeds, runner.device)
        self.adjuster = LogitsAdjuster.create(self.params, self.prompt, runner.vocab_size,
                                              runner.device, request.grammar)
        self.logprobs: list[TokenLogprobs] = []  # one per output token, when asked for
        self.prompt_logprobs: list[TokenLogprobs] = []  # one per prompt token, when asked for
        if self.params.prompt_logprobs is not None:
            self.prompt_logprobs.append(TokenLogprobs(self.prompt[0], None, None, []))
        self.stop_tokens = frozenset(self.params.stop_token_ids)  # looked up at every token
        self.detokenizer = IncrementalDetokenizer(
            runner.tokenizer, self.prompt, self.params.stop,
            self.params.include_stop_str_in_output, self.params.skip_special_tokens,
        )
        limit = runner.max_model_len - len(self.prompt)
        wanted = self.params.max_tokens if self.params.max_tokens is not None else limit
        self.max_tokens = min(wanted, limit)
        self.finish_reason: str | None = None
        self.first_token_at = 0.0
        self.last_token_at = 0.0

    @property
    def length(self) -> int:
        """Tokens in the slot."""
        return self.computed + max(len(self.output) - 1, 0)

    @property
    def prefilled(self) -> bool:
        return self.computed == len(self.prompt)


class Engine:
    """The batching loop of one model instance."""

    def __init__(self, name: str, runner: ModelRunner, settings: EngineSettings,
                 source: RequestSource, metrics: EngineMetrics | None) -> None:
        self.name = name
        self.runner = runner
        self.settings = settings
        self.source = source
        self.metrics = metrics
        self.store = runner.new_store(settings.max_num_seqs)
        self.step_tokens = settings.step_tokens(runner.device.type)
        self.eos = _eos_tokens(runner)
        self.seeds = random.Random(settings.seed)
        # Rows [0, decoding) hold sequences past their prompt, rows [decoding, len) prefill.
        self.running: list[Sequence] = []
        self.decoding = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"{name}-engine", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join()

    # -- the loop ------------------------------------------------------------------------------

    def _loop(self) -> None:
        # The KV slots are inference tensors: every step, row moves included, runs in this mode,
        # with the runner's GPU (if it has one) as this thread's CUDA device.
        with torch.inference_mode(), self.runner.on_device():
            self._steps()

    def _steps(self) -> None:
        while not self._stopping.is_set():
            try:
                self._admit()
                if not self.running:
                    self._report()  # the queue may have emptied of cancelled requests
                    continue
                self._retire_cancelled()
                self._step()
                self._report()
            except Exception as exc:  # a bug or a failing model: fail what runs, keep serving
                log.exception("%s: engine step failed", self.name)
                error = TritonError.internal(f"llm engine step failed: {exc}")
                failed, self.running, self.decoding = self.running, [], 0
                for sequence in failed:
                    sequence.request.on_error(error)
        shutdown = TritonError.unavailable("the model is being unloaded")
        for sequence in self.running:
            sequence.request.on_error(shutdown)
        self.running = []

    def _admit(self) -> None:
        room = self.settings.max_num_seqs - len(self.running)
        if room <= 0:
            return
        wait = 0.0 if self.running else 0.1
        for request in self.source.take(room, wait):
            if request.cancelled:
                request.on_error(TritonError.cancelled("Request was cancelled"))
                continue
            try:
                sequence = Sequence(request, len(self.running), self.settings, self.runner,
                                    self.seeds)
            except Exception as exc:  # noqa: BLE001 - this request fails, not the others
                # Taken from the queue, it is answered here or never; the running sequences
                # and the rest of what was taken are not its business.
                log.exception("%s: admitting a request failed", self.name)
                request.on_error(TritonError.internal(f"llm engine: admitting the request "
                                                      f"failed: {exc}"))
                continue
            self.running.append(sequence)

    def _retire_cancelled(self) -> None:
        for sequence in [s for s in self.running if s.request.cancelled]:
            self._drop(sequence)
            sequence.request.on_error(TritonError.cancelled("Request was cancelled"))

    def _step(self) -> None:
        """One forward pass: a token of every decoding sequence and prompt chunks within the
        step's token budget; then each sequence whose token came out takes it."""
        decoding = self.running[: self.decoding]
        # Every decoding sequence sits in rows [0, decoding): one contiguous slice.
        assert all(s.row == i for i, s in enumerate(decoding)), "decoding rows out of order"
        chunks = self._chunks(self.step_tokens - len(decoding))
        if not decoding and not chunks:
            return
        logits = self.runner.step(self.store, [(s.output[-1], s.length) for s in decoding],
                                  [chunk for _, chunk in chunks])
        sampled, rows = list(decoding), list(range(len(decoding)))
        offset = len(decoding)
        for sequence, chunk in chunks:
            ending = logits[offset:offset + chunk.keep]
            offset += chunk.keep
            wanted = sequence.params.prompt_logprobs
            if wanted is not None:
                # Position i's logits predict token i + 1: those still in the prompt.
                targets = sequence.prompt[chunk.start + 1:chunk.start + len(chunk.tokens) + 1]
                sequence.prompt_logprobs += logprobs_of(
                    ending[:len(targets)], targets, [wanted] * len(targets)) if targets else []
            sequence.computed += len(chunk.tokens)
            if self.metrics:
                self.metrics.prompt_tokens(len(chunk.tokens))
            if sequence.prefilled:
                sampled.append(sequence)
                rows.append(offset - 1)
        if not sampled:
            return
        tokens = self._sample(logits[rows] if len(rows) < logits.shape[0] else logits, sampled)
        finished = [s for s, token in zip(sampled, tokens, strict=True) if self._accept(s, token)]
        for sequence in sampled[len(decoding):]:
            self._to_decoding(sequence)
        # Only now: every row's new key/value is counted in its length, so moves copy it.
        for sequence in finished:
            self._drop(sequence)

    def _chunks(self, budget: int) -> list[tuple[Sequence, Chunk]]:
        """The prompt chunks of this step, oldest request first, within `budget` tokens. Without
        chunked prefill a prompt goes whole: when it fits, or when it is the step's first."""
        chunks: list[tuple[Sequence, Chunk]] = []
        waiting = sorted(self.running[self.decoding:], key=lambda s: s.request.arrival)
        for sequence in waiting:
            remaining = len(sequence.prompt) - sequence.computed
            if self.settings.enable_chunked_prefill:
                count = min(remaining, budget)
            else:
                count = remaining if remaining <= budget or not chunks else 0
            if count <= 0:
                break
            start = sequence.computed
            ends = start + count == len(sequence.prompt)
            keep = count if sequence.params.prompt_logprobs is not None else int(ends)
            chunks.append((sequence, Chunk(sequence.row, sequence.prompt[start:start + count],
                                           start, keep)))
            budget -= count
        return chunks

    @staticmethod
    def _sample(logits: torch.Tensor, batch: list[Sequence]) -> list[int]:
        """Each row's next token, and its logprobs for the sequences that ask."""
        tokens = sample(logits, batch)
        wanting = [i for i, s in enumerate(batch) if s.params.logprobs is not None]
        if wanting:
            found = logprobs_of(logits[wanting], [tokens[i] for i in wanting],
                                [batch[i].params.logprobs or 0 for i in wanting])
            for i, entry in zip(wanting, found, strict=True):
                batch[i].logprobs.append(entry)
        return tokens

    def _accept(self, sequence: Sequence, token: int) -> bool:
        """A sampled token: check the stop conditions, send the new text; True when the
        sequence is finished (the caller frees its slot)."""
        now = time.monotonic()
        params = sequence.params
        if self.metrics:
            self.metrics.generation_tokens(1)
            if sequence.output:
                self.metrics.output_token(now - sequence.last_token_at)
            else:
                self.metrics.first_token(now - sequence.request.arrival)
        if not sequence.output:
            sequence.first_token_at = now
        sequence.last_token_at = now
        sequence.output.append(token)
        if sequence.adjuster is not None:
            sequence.adjuster.add(token)
        ending = len(sequence.output) >= params.min_tokens
        stop_token = token in sequence.stop_tokens or not params.ignore_eos and token in self.eos
        if ending and stop_token or sequence.detokenizer.add(token, check_stop=ending):
            sequence.finish_reason = "stop"
        elif len(sequence.output) >= sequence.max_tokens:
            sequence.finish_reason = "length"
        finished = sequence.finish_reason is not None
        delta = sequence.detokenizer.release(finished)
        if finished and self.metrics:
            self.metrics.finished(now - sequence.request.arrival, len(sequence.prompt),
                                  len(sequence.output))
        # Every token is a response of a stream, empty while text is held back (an unfinished
        # character, a possible stop string), as vLLM answers each engine step: benchmark
        # clients time each token by its response.
        sequence.request.on_output(sequence, delta, finished)
        return finished

    # -- rows ----------------------------------------------------------------------------------

    def _to_decoding(self, sequence: Sequence) -> None:
        """A sequence past its prompt joins the decoding rows (swapped to row `decoding`)."""
        target = self.decoding
        other = self.running[target]
        if other is not sequence:
            length = max(sequence.computed, other.computed)
            self.store.swap_rows(sequence.row, target, length)
            self.running[sequence.row], self.running[target] = other, sequence
            other.row, sequence.row = sequence.row, target
        self.decoding += 1

    def _drop(self, sequence: Sequence) -> None:
        """Free a sequence's slot, keeping decoding rows first and all rows contiguous."""
        if sequence not in self.running:
            return
        row = sequence.row
        last = len(self.running) - 1
        if row < self.decoding:
            # The last decoding row fills the hole; the last row fills that one.
            end = self.decoding - 1
            self._move(end, row)
            self._move(last, end)
            self.decoding -= 1
        else:
            self._move(last, row)
        self.running.pop()

    def _move(self, source: int, target: int) -> None:
        if source == target:
            return
        moved = self.running[source]
        self.store.move_row(source, target, moved.length)
        self.running[target] = moved
        moved.row = target

    def _report(self) -> None:
        if self.metrics:
            self.metrics.scheduler(len(self.running), self.source.waiting())


def _eos_tokens(runner: ModelRunner) -> set[int]:
    """The end-of-sequence tokens: the generation config's (one or a list), else the
    tokenizer's."""
    found: set[int] = set()
    generation = getattr(runner.model, "generation_config", None)
    for source in (getattr(generation, "eos_token_id", None), runner.config.eos_token_id,
                   runner.tokenizer.eos_token_id):
        if source is None:
            continue
        found.update(source if isinstance(source, (list, tuple)) else [source])
        break
    return found
