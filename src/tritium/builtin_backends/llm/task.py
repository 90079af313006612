"""InferTask: one Triton request as the engine sees it, and its answers (MindIE's InferTask).

`ModelInstanceState.enqueue` makes one per request: it reads the inputs of Triton's vLLM backend
(`text_input`, optional `stream`, `sampling_parameters`, `exclude_input_in_output` and the
`return_*` switches of its additional outputs), tokenizes the prompt and checks it, so a bad
request is answered at once with INVALID_ARG. The engine then calls `on_output` for each token:
streaming requests get one decoupled response per token, with its new text (empty while an
unfinished character or a possible stop string is held back; the last flagged FINAL),
others one final response with the whole text (the prompt first, unless
`exclude_input_in_output`), as the vLLM backend answers. A request whose client went away ends
with a CANCELLED error, as the vLLM backend's does.

Logprobs asked for in the sampling parameters (`logprobs`, `prompt_logprobs`) come back in the
`logprobs` output (the tokens of this response's text) and `prompt_logprobs` (the first
response), as JSON in vLLM's shape (logprobs.py). The vLLM backend's `return_logprobs` switch,
when sent, says whether the `logprobs` output comes at all (`null` when the sampling parameters
asked for none), as there.

Inputs beyond the vLLM backend's, so that a frontend (the OpenAI one) needs no tokenizer of
its own: `apply_chat_template` (BOOL) says `text_input` holds chat messages as JSON
([{"role": ..., "content": ...}, ...]) to render with the tokenizer's chat template, and
`prompt_options` how (prompt.py, which also answers `tokenize` and `detokenize` requests);
`prompt_token_ids` (INT64) gives the prompt as token ids, and the first response then carries
their text in `prompt_text` (a client that sent text has it; one that sent ids needs it to echo
the prompt, as vLLM's OpenAI server echoes a token-id prompt);
`check_max_tokens` (BOOL) makes a `max_tokens` past the room the prompt leaves in
`max_model_len` an INVALID_ARG with vLLM's OpenAI server's message, where the vLLM backend
would stop at the limit with finish_reason `length`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from tritium.backend import (
    RESPONSE_COMPLETE_FINAL,
    InferenceResponse,
    Request,
    Tensor,
    TritonError,
)

from .logprobs import to_json
from .prompt import prompt_tokens
from .request_inputs import flag, string
from .sampling import SamplingParams, parse_sampling_parameters

if TYPE_CHECKING:
    from .engine import Sequence
    from .runner import Checkpoint

RETURN_SWITCHES = ("return_finish_reason", "return_num_input_tokens", "return_num_output_tokens")


class InferTask:
    """A request admitted to the model's queue: prompt tokens, sampling, how to answer."""

    def __init__(self, request: Request, checkpoint: Checkpoint,
                 on_done: Callable[[InferTask], None]) -> None:
        self.request = request
        self._on_done = on_done
        self.arrival = time.monotonic()
        self.stream = flag(request, "stream", False)
        exclude = flag(request, "exclude_input_in_output", None)
        if exclude is False and self.stream:
            raise TritonError.invalid_arg(
                "When streaming, `exclude_input_in_output` = False is not allowed."
            )
        # vLLM's backend: the prompt comes first in the text unless excluded or streaming.
        self.prepend_input = not exclude if exclude is not None else not self.stream
        self.returns = {name: bool(flag(request, name, False)) for name in RETURN_SWITCHES}
        # The vLLM backend's switch of the `logprobs` output; without it, the output comes
        # whenever the sampling parameters ask for logprobs.
        self.return_logprobs = flag(request, "return_logprobs", None)
        self.params: SamplingParams = _sampling_parameters(request)
        self.prompt_text, self.prompt = prompt_tokens(checkpoint, request,
                                                      limit=checkpoint.max_model_len)
        if not self.prompt:
            raise TritonError.invalid_arg("the prompt is empty: text_input holds no tokens")
        if flag(request, "check_max_tokens", False):
            _check_max_tokens(self.params, len(self.prompt), checkpoint.max_model_len)
        _check_logit_bias(self.params, checkpoint)
        guided = self.params.guided
        self.grammar = checkpoint.grammars.compile(guided) if guided is not None else None
        self._decode = checkpoint.tokenizer.decode
        self._sent_tokens = 0
        self._sent_logprobs = 0
        self._sent_prompt_logprobs = False
        self._send_prompt_text = request.input("prompt_token_ids") is not None
        self._wanted = set(request.requested_output_names)

    @property
    def cancelled(self) -> bool:
        return self.request.cancelled

    def on_output(self, sequence: Sequence, delta: str, finished: bool) -> None:
        flags = RESPONSE_COMPLETE_FINAL if finished else 0
        if self.stream:
            self._send(self._response(sequence, delta, finished), flags)
        elif finished:
            text = sequence.detokenizer.text
            if self.prepend_input:
                text = self.prompt_text + text
            self._send(self._response(sequence, text, finished), flags)

    def on_error(self, error: TritonError) -> None:
        self._send(InferenceResponse(error=error), RESPONSE_COMPLETE_FINAL)

    def _send(self, response: InferenceResponse, flags: int) -> None:
        if flags & RESPONSE_COMPLETE_FINAL:
            self._on_done(self)
        sender = self.request.response_sender
        if sender is None or sender.is_completed:
            return
        try:
            sender.send(response, flags)
        except TritonError:  # the server closed the sender (shutdown): nobody is listening
            pass

    def _response(self, sequence: Sequence, text: str, finished: bool) -> InferenceResponse:
        outputs = [_bytes("text_output", text.encode("utf-8"))]
        if self.returns["return_finish_reason"]:
            reason = sequence.finish_reason if finished else None
            outputs.append(_bytes("finish_reason", str(reason).encode()))
        if self.returns["return_num_input_tokens"]:
            outputs.append(_uint32("num_input_tokens", len(sequence.prompt)))
        if self.returns["return_num_output_tokens"]:
            total = len(sequence.output)
            count = total - self._sent_tokens if self.stream else total
            self._sent_tokens = total
            outputs.append(_uint32("num_output_tokens", count))
        asked = self.params.logprobs is not None
        if asked if self.return_logprobs is None else self.return_logprobs:
            outputs.append(self._new_logprobs(sequence) if asked else _bytes("logprobs", b"null"))
        if self.params.prompt_logprobs is not None and not self._sent_prompt_logprobs:
            self._sent_prompt_logprobs = True  # once, with the first response
            outputs.append(self._logprobs("prompt_logprobs", sequence.prompt_logprobs))
        if self._send_prompt_text:  # once, with the first response
            self._send_prompt_text = False
            outputs.append(_bytes("prompt_text", self.prompt_text.encode("utf-8")))
        if self._wanted:
            outputs = [t for t in outputs if t.name in self._wanted]
        return InferenceResponse(outputs=outputs)

    def _new_logprobs(self, sequence: Sequence) -> Tensor:
        """This response's tokens' logprobs (all of them in a final, non-streamed one)."""
        sent = self._sent_logprobs if self.stream else 0
        self._sent_logprobs = len(sequence.logprobs)
        return self._logprobs("logprobs", sequence.logprobs[sent:])

    def _logprobs(self, name: str, entries: list[Any]) -> Tensor:
        skip = self.params.skip_special_tokens

        def decode(token: int) -> str:
            return str(self._decode([token], skip_special_tokens=skip))

        return _bytes(name, json.dumps(to_json(entries, decode)).encode())


def _check_max_tokens(params: SamplingParams, prompt: int, limit: int) -> None:
    if params.max_tokens is not None and prompt + params.max_tokens > limit:
        raise TritonError.invalid_arg(
            f"This model's maximum context length is {limit} tokens. However, you requested "
            f"{prompt + params.max_tokens} tokens ({prompt} in the messages, "
            f"{params.max_tokens} in the completion). Please reduce the length of the messages "
            "or completion."
        )


def _check_logit_bias(params: SamplingParams, checkpoint: Checkpoint) -> None:
    vocab = checkpoint.vocab_size
    outside = sorted(t for t in params.logit_bias if not 0 <= t < vocab)
    if outside:
        raise TritonError.invalid_arg(
            f"token_id(s) {outside} in logit_bias contain out-of-vocab token ids. "
            f"Vocabulary size: {vocab}"
        )


def _bytes(name: str, value: bytes) -> Tensor:
    return Tensor(name, "BYTES", (1,), np.array([value], dtype=np.object_))


def _uint32(name: str, value: int) -> Tensor:
    return Tensor(name, "UINT32", (1,), np.array([value], dtype=np.uint32))


def _sampling_parameters(request: Request) -> SamplingParams:
    text = string(request, "sampling_parameters")
    if text is not None:
        return parse_sampling_parameters(text)
    # As the vLLM backend: without the input, the request's parameters are the sampling ones.
    return parse_sampling_parameters(dict(request.parameters))
